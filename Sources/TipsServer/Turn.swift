import TipsEngine
import TipsStore

/// The current event-loop turn: the durable writes its requests staged, committed together in one transaction from
/// one place (``Server``'s end of turn), and the connections with output to hand over afterwards.
final class Turn {
  let store: Datastore
  let logger: Logger
  private(set) var pendingWrites: [StateWrite] = []
  /// Writes staged since the daemon started; a request staged durable writes when it grew during the request.
  private(set) var writesStaged = 0
  /// Connections with output to flush (or paused input to resume) at the end of the turn, in the order they were
  /// marked (each once: ``Session/isDirty``).
  private(set) var dirty: [Session] = []

  init(store: Datastore, logger: Logger) {
    self.store = store
    self.logger = logger
  }

  /// Stages durable writes for this turn's commit.
  func stage(_ writes: [StateWrite]) {
    guard !writes.isEmpty else { return }
    pendingWrites.append(contentsOf: writes)
    writesStaged += writes.count
  }

  func markDirty(_ session: Session) {
    guard !session.isDirty else { return }
    session.isDirty = true
    dirty.append(session)
  }

  func forget(_ session: Session) {
    guard session.isDirty else { return }
    session.isDirty = false
    dirty.removeAll { $0 === session }
  }

  /// Takes the dirty connections (the caller marks again those with work left).
  func takeDirty() -> [Session] {
    let sessions = dirty
    dirty.removeAll(keepingCapacity: true)
    for session in sessions { session.isDirty = false }
    return sessions
  }

  /// Commits the turn's writes in one transaction; false if the commit failed (the writes are dropped, and every
  /// request that staged them is answered with -32005 instead of its result).
  func commit() -> Bool {
    guard !pendingWrites.isEmpty else { return true }
    let writes = pendingWrites
    pendingWrites.removeAll(keepingCapacity: true)
    do {
      try store.commit(writes)
      return true
    } catch {
      logger.error("datastore commit failed", [("error", "\(error)"), ("writes", String(writes.count))])
      return false
    }
  }
}
