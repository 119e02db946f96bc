import TipsEngine
import TipsLogging
import TipsStore
import TipsSystem

/// The current event-loop turn: the durable writes and history entries its requests staged, committed together in
/// one transaction from one place (``Server``'s end of turn), and the connections with output to hand over
/// afterwards.
final class Turn {
  let store: Datastore
  let logger: Logger
  let counters: ServerCounters
  // The fields a request touches are `@exclusivity(unchecked)`: one owner (the loop thread), never passed inout
  // across a call that touches them again; their dynamic checks were a measurable share of a donation's cost.
  @exclusivity(unchecked) private(set) var pendingWrites: [StateWrite] = []
  /// History entries (cursors assigned) committed with the writes: an acknowledged request's history is as durable
  /// as its writes.
  @exclusivity(unchecked) private(set) var pendingHistory = HistoryBatch()
  /// Writes and history entries staged since the daemon started; a request staged durable writes when it grew
  /// during the request.
  @exclusivity(unchecked) private(set) var writesStaged = 0
  /// Whether anything changed in this turn (a write, a history entry, or a change notified), for `inspect/changed`.
  @exclusivity(unchecked) var changed = false
  /// Hosted accounts whose tips changed this turn (``Tenant/changed`` set): the end of the turn notifies their
  /// subscribers without walking every resident account.
  var changedTenants: [Tenant] = []
  /// The sync layer's writes of the turn (outbox, merge state), committed in the same transaction.
  private(set) var pendingSyncWrites: [SyncWrite] = []
  /// Connections with output to flush (or paused input to resume) at the end of the turn, in the order they were
  /// marked (each once: ``Session/isDirty``).
  private(set) var dirty: [Session] = []

  init(store: Datastore, logger: Logger, counters: ServerCounters) {
    self.store = store
    self.logger = logger
    self.counters = counters
  }

  /// Stages durable writes for this turn's commit.
  func stage(_ writes: [StateWrite]) {
    guard !writes.isEmpty else { return }
    // A donation's one write (nearly every request) is appended as an element: the generic append(contentsOf:)
    // cost ≈ 250 instructions for it.
    if writes.count == 1 { pendingWrites.append(writes[0]) } else { pendingWrites.append(contentsOf: writes) }
    writesStaged += writes.count
    changed = true
  }

  /// Stages a history entry (its cursor assigned) for this turn's commit.
  func stage(historyEntry: HistoryEvent) {
    pendingHistory.append(historyEntry)
    writesStaged += 1
    changed = true
  }

  /// Stages a donation's history entry (the hot path: encoded at once, no `HistoryEvent` built).
  func stageDonation(cursor: Int64, event: String, at: Double) {
    pendingHistory.appendDonation(cursor: cursor, event: event, at: at)
    writesStaged += 1
    changed = true
  }

  /// Counts durable work staged elsewhere (a hosted account's history entries): the request that staged it is
  /// acknowledged only after its commit.
  func noteStaged(_ count: Int = 1) {
    writesStaged += count
    changed = true
  }

  /// Stages the sync layer's writes for this turn's commit.
  func stageSync(_ writes: [SyncWrite]) {
    pendingSyncWrites.append(contentsOf: writes)
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

  /// Commits the turn's writes and history in one transaction; false if the commit failed (both are dropped, every
  /// request that staged them is answered with -32005 instead of its result, and the server reads its state back
  /// from the datastore).
  func commit(replies: [IdempotentReply] = []) -> Bool {
    guard !pendingWrites.isEmpty || !pendingHistory.isEmpty || !pendingSyncWrites.isEmpty || !replies.isEmpty else {
      return true
    }
    let writes = pendingWrites
    let history = pendingHistory
    let syncWrites = pendingSyncWrites
    pendingWrites.removeAll(keepingCapacity: true)
    pendingHistory.removeAll()
    pendingSyncWrites.removeAll(keepingCapacity: true)
    let started = System.monotonicSeconds()
    do {
      try store.commit(writes, history: history, sync: syncWrites, replies: replies)
      counters.commitDuration.observe(System.monotonicSeconds() - started)
      counters.commitBatch.observe(Double(writes.count + history.count))
      return true
    } catch {
      counters.commitFailures += 1
      logger.error(
        "datastore commit failed",
        [("error", "\(error)"), ("writes", String(writes.count)), ("history", String(history.count))])
      return false
    }
  }
}
