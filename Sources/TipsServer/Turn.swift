import TipsEngine
import TipsStore

/// The current event-loop turn: the durable writes its requests staged, committed together in one transaction from
/// one place (``Server``'s end of turn), and the connections with output to hand over afterwards.
final class Turn {
  let store: Datastore
  let logger: Logger
  private(set) var pendingWrites: [StateWrite] = []
  /// The sync layer's writes of the turn (outbox, merge state), committed in the same transaction.
  private(set) var pendingSyncWrites: [SyncWrite] = []
  /// Writes staged since the daemon started; a request staged durable writes when it grew during the request.
  private(set) var writesStaged = 0
  /// Connections with output to flush (or paused input to resume) at the end of the turn.
  private(set) var dirty: [UInt64: Session] = [:]

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

  /// Stages the sync layer's writes for this turn's commit.
  func stageSync(_ writes: [SyncWrite]) {
    pendingSyncWrites.append(contentsOf: writes)
  }

  func markDirty(_ session: Session) {
    dirty[session.id] = session
  }

  func forget(_ session: Session) {
    dirty[session.id] = nil
  }

  /// Takes the dirty connections (the caller marks again those with work left).
  func takeDirty() -> [Session] {
    let sessions = Array(dirty.values)
    dirty.removeAll(keepingCapacity: true)
    return sessions
  }

  /// Commits the turn's writes in one transaction; false if the commit failed (the writes are dropped, and every
  /// request that staged them is answered with -32005 instead of its result).
  func commit() -> Bool {
    guard !pendingWrites.isEmpty || !pendingSyncWrites.isEmpty else { return true }
    let writes = pendingWrites
    let syncWrites = pendingSyncWrites
    pendingWrites.removeAll(keepingCapacity: true)
    pendingSyncWrites.removeAll(keepingCapacity: true)
    do {
      try store.commit(writes, sync: syncWrites)
      return true
    } catch {
      logger.error("datastore commit failed", [("error", "\(error)"), ("writes", String(writes.count))])
      return false
    }
  }
}
