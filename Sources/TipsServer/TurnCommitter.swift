import TipsEngine
import TipsRecords

/// How a loop turn's writes become durable — one implementation per mode, so the request path and the end of a turn
/// have one shape (issue #44): ``LocalCommitter`` (the one-user daemon: the datastore's transaction, the sync
/// outbox) and ``HostedService`` (hosted mode: every touched account's operations in one PostgreSQL transaction,
/// answered later).
///
/// ``Services/recordMerged(_:in:history:)`` hands every mutation's durable part to ``stage(_:leading:in:)``;
/// ``Server/endOfTurn()`` asks ``commit(dirty:)`` to commit, flushes the sessions whose output does not wait, then
/// calls ``afterTurn(committed:)``.
protocol TurnCommitter: AnyObject {
  /// Stages the durable part of a mutation of `tenant` — its writes and the history entries it causes (after
  /// `leading`) — for this turn's commit.
  func stage(_ mutation: Mutation, leading: [HistoryEvent], in tenant: Tenant)
  /// Operations the tenant's merge model made of its writes (hosted accounts) wait for this turn's commit.
  func stagedOperations(of tenant: Tenant)
  /// A change's reply was remembered under its idempotency key: it is stored with this turn's commit.
  func stagedReply(in tenant: Tenant)
  /// Commits the turn; answers whether it committed (a synchronous commit — an asynchronous one is answered later and
  /// counts as committed here), the sessions with output this turn (``Turn/takeDirty()``, taken once everything the
  /// commit itself stages is staged) and those among them whose output waits for an asynchronous commit's answer.
  func commitTurn() -> (committed: Bool, dirty: [Session], held: Set<ObjectIdentifier>)
  /// After the turn's output was handed over (`stopping`: the daemon is stopping).
  func afterTurn(committed: Bool, stopping: Bool)
}

/// The one-user daemon's commit: the turn's writes, history entries and idempotent replies in one datastore
/// transaction; a failed one reads the state back (``Server/restoreFromDatastore()``).
final class LocalCommitter: TurnCommitter {
  unowned let server: Server
  unowned let services: Services

  init(server: Server, services: Services) {
    self.server = server
    self.services = services
  }

  func stage(_ mutation: Mutation, leading: [HistoryEvent], in tenant: Tenant) {
    let turn = services.turn
    turn.stage(mutation.writes)
    if !mutation.changes.isEmpty { turn.changed = true }
    guard tenant.history.enabled else { return }
    let engine = tenant.engine
    if let streamed = tenant.history.record(
      mutation, leading: leading, now: { engine.clock.now() }, into: turn, counters: services.counters),
      !streamed.isEmpty && tenant.subscriptions.hasAnalyticsSubscribers
    {
      for (session, note) in tenant.subscriptions.analyticsNotifications(for: streamed[...]) {
        services.stage(.notification(note), on: session)
      }
    }
  }

  func stagedOperations(of tenant: Tenant) {}

  func stagedReply(in tenant: Tenant) { services.turn.noteStaged() }

  func commitTurn() -> (committed: Bool, dirty: [Session], held: Set<ObjectIdentifier>) {
    guard let local = services.local else { return (true, services.turn.takeDirty(), []) }
    local.sync?.beforeCommit()
    let committed = services.turn.commit(replies: local.idempotency.takeStaged())
    if !committed { server.restoreFromDatastore() }
    if services.turn.changed {
      services.turn.changed = false
      for (session, note) in local.subscriptions.inspectNotifications() {
        services.stage(.notification(note), on: session)
      }
    }
    if local.subscriptions.hasCatchingUp && services.pumpAnalytics() { services.requestEndOfTurn() }
    local.sync?.afterCommit(committed)
    return (committed, services.turn.takeDirty(), [])
  }

  func afterTurn(committed: Bool, stopping: Bool) {
    guard let local = services.local else { return }
    // The tips the restore moved back are notified now, after the failed turn's output (an analytics event staged
    // with it would have been dropped).
    if !committed { for step in server.engine.advanceTimeInSteps() { services.record(step, in: local) } }
    if !stopping { server.timeDriver?.reschedule() }
  }
}
