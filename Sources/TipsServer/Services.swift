import TipsEngine
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsStore
import TipsSystem

/// What every handler may use: the tenants (one account's engine, subscriptions and history each), the turn and the
/// daemon's settings — one object the server builds once, instead of handlers reading server fields.
final class Services {
  let turn: Turn
  let configuration: ServerConfiguration
  let logger: Logger
  /// Set when the daemon runs with `--clock virtual`.
  let virtualClock: VirtualClock?
  /// `/metrics`.
  let counters: ServerCounters
  /// Subscription ids, unique across tenants.
  let subscriptionIDs = SubscriptionIDs()
  /// The one tenant of a daemon serving one user's state (nil in hosted mode, where requests name theirs).
  private(set) var local: Tenant?
  /// Hosted mode (`--hosted`): every account's state in PostgreSQL.
  var hosted: HostedService?
  /// Whom the daemon serves — one user's state (``LocalCommitter``) or many accounts (``HostedService``) — and so how
  /// requests are routed and the turn's writes become durable. Set by the server as it starts serving one or the
  /// other; the only place the two modes part.
  var mode: any ServingMode {
    get { modeStorage! }
    set { modeStorage = newValue }
  }
  private var modeStorage: (any ServingMode)?
  /// How the turn's writes become durable (the mode's commit).
  var committer: any TurnCommitter { mode }
  /// Asks the loop to run the end of turn soon (work staged outside an I/O callback must not wait for one). Set by
  /// the server once it exists; called for every request, so `@exclusivity(unchecked)` (loop thread only).
  @exclusivity(unchecked) var requestEndOfTurn: () -> Void = {}
  /// Handles the requests a session has waiting (its asynchronous reply was staged, its account became idle).
  var resumeInput: (Session) -> Void = { _ in }
  /// `exit` over stdio: stop the daemon with this status.
  var stopDaemon: (ServerExit) -> Void = { _ in }
  /// The catalog the daemon serves (declared events, templates), if any.
  var catalog: CatalogService?
  /// `catalog/reload`: reload the catalog file and apply it (nil when the daemon has no catalog).
  var reloadCatalog: ((_ trigger: String) -> CatalogReloadRequest.Response)?

  init(turn: Turn, configuration: ServerConfiguration, logger: Logger, virtualClock: VirtualClock?) {
    self.turn = turn
    self.configuration = configuration
    self.logger = logger
    self.virtualClock = virtualClock
    self.counters = turn.counters
  }

  /// Makes the daemon's one tenant (a daemon serving one user's state).
  func makeLocalTenant(engine: Engine, history: HistoryRecorder) -> Tenant {
    let tenant = Tenant(account: nil, engine: engine, history: history, subscriptionIDs: subscriptionIDs, turn: turn)
    local = tenant
    return tenant
  }

  var store: Datastore { turn.store }

  /// Records an engine mutation of `tenant`: its writes for this turn's commit, its changes as notifications to the
  /// tenant's subscribers, and the history entries it causes (after `leading`, the entries of the request itself:
  /// an impression, an action) for the same commit and for the analytics stream; with sync (a device's `--sync`, or
  /// a hosted account), its synced writes become operations for the account's other devices and nodes.
  func record(_ mutation: Mutation, in tenant: Tenant, history leading: [HistoryEvent] = []) {
    recordMerged(mutation, in: tenant, history: leading)
    guard !mutation.writes.isEmpty else { return }
    if let sync = tenant.sync { sync.recordedLocal(mutation) }
    if let model = tenant.model {
      let effects = model.recordLocal(mutation.writes, wallNow: System.wallClockSeconds())
      for merged in effects.mutations { recordMerged(merged, in: tenant) }
      committer.stagedOperations(of: tenant)
    }
  }

  /// Records a mutation that merged other devices' state (or brought the engine to a merged value): persisted,
  /// recorded in the history and notified like any other, never sent back out as operations.
  func recordMerged(_ mutation: Mutation, in tenant: Tenant, history leading: [HistoryEvent] = []) {
    let engine = tenant.engine
    let subscriptions = tenant.subscriptions
    committer.stage(mutation, leading: leading, in: tenant)
    // Debug lines only when asked for: their metadata would otherwise be built on every request.
    let debugging = logger.level <= .debug
    if debugging && !mutation.changes.isEmpty {
      logger.debug("changes", [("changes", mutation.changes.map { "\($0)" }.joined(separator: "; "))])
    }
    for (session, note) in subscriptions.notifications(for: mutation.changes, engine: engine) {
      if debugging {
        logger.debug(
          "notification staged",
          [("connection", String(session.id)), ("method", type(of: note.notification).method)])
      }
      stage(.notification(note), on: session)
    }
  }

  /// A change's reply was remembered under its idempotency key: it is stored with the turn's commit, and the request
  /// is acknowledged only after it.
  func recordedIdempotentReply(in tenant: Tenant) {
    committer.stagedReply(in: tenant)
  }

  /// Stages output for a connection, to be handed over after this turn's commit.
  func stage(_ item: OutboundStateMachine.Item, on session: Session) {
    if case .notification(let note) = item {
      counters.notificationsSent[type(of: note.notification).method, default: 0] += 1
    }
    session.outbound.stage(item)
    markDirty(session)
  }

  /// After a commit: stages a page of the history for each analytics subscriber replaying it whose connection has
  /// room (below its high-water mark), and turns live those that caught up. Everything recorded is committed at
  /// this point, so a subscriber that read the history to its end misses nothing by going live. Returns whether a
  /// replay goes on (the caller runs another turn).
  func pumpAnalytics() -> Bool {
    guard let tenant = local else { return false }
    let history = tenant.history
    var more = false
    for subscriber in tenant.subscriptions.analyticsSubscribers.values where !subscriber.live {
      let session = subscriber.session
      guard !session.outbound.closing else { continue }
      let owed = session.outbound.stagedBytes + session.outbound.queuedBytes + session.stream.pendingWriteBytes
      guard owed < configuration.outgoingHighWater else { continue }
      let page: [HistoryEvent]
      do {
        page = try store.history(after: subscriber.delivered, limit: Self.replayPage)
      } catch {
        logger.error("cannot replay the history", [("error", "\(error)")])
        continue
      }
      for event in page {
        let note = AnalyticsEventNotification(subscription: subscriber.id, event: AnalyticsEventInfo(event))
        stage(.notification(StagedNotification(notification: note, shouldDisplay: nil)), on: session)
      }
      subscriber.delivered = page.last?.cursor ?? subscriber.delivered
      if page.count < Self.replayPage {
        subscriber.live = true
        // Entries recorded but not committed cannot exist here (this runs after the commit), but a failed commit
        // burns cursors: nothing above `delivered` is stored, so going live loses nothing.
        subscriber.delivered = max(subscriber.delivered, history.lastCursor)
      } else {
        more = true
      }
    }
    return more
  }

  /// History entries replayed per subscriber per turn.
  static let replayPage = 256

  func markDirty(_ session: Session) {
    turn.markDirty(session)
    requestEndOfTurn()
  }
}
