import TipsEngine
import TipsJSON
import TipsProtocol
import TipsStore

/// What every handler may use: the engine, the subscriptions, the turn and the daemon's settings — one object the
/// server builds once, instead of handlers reading server fields.
final class Services {
  let engine: Engine
  let subscriptions: SubscriptionRegistry
  let turn: Turn
  let configuration: ServerConfiguration
  let logger: Logger
  /// Set when the daemon runs with `--clock virtual`.
  let virtualClock: VirtualClock?
  /// The lifecycle history: entries derived from mutations, cursors.
  let history: HistoryRecorder
  /// `/metrics`.
  let metrics: OperationalMetrics
  /// Asks the loop to run the end of turn soon (work staged outside an I/O callback must not wait for one). Set by
  /// the server once it exists; called for every request, so `@exclusivity(unchecked)` (loop thread only).
  @exclusivity(unchecked) var requestEndOfTurn: () -> Void = {}
  /// `exit` over stdio: stop the daemon with this status.
  var stopDaemon: (ServerExit) -> Void = { _ in }
  /// The catalog the daemon serves (declared events, templates), if any.
  var catalog: CatalogService?
  /// `catalog/reload`: reload the catalog file and apply it (nil when the daemon has no catalog).
  var reloadCatalog: ((_ trigger: String) -> CatalogReloadRequest.Response)?
  /// Sync across devices (`--sync`), if configured.
  var sync: SyncService?

  init(
    engine: Engine, turn: Turn, configuration: ServerConfiguration, logger: Logger, virtualClock: VirtualClock?,
    history: HistoryRecorder
  ) {
    self.engine = engine
    self.subscriptions = SubscriptionRegistry()
    self.turn = turn
    self.configuration = configuration
    self.logger = logger
    self.virtualClock = virtualClock
    self.history = history
    self.metrics = turn.metrics
  }

  var store: Datastore { turn.store }

  /// Records an engine mutation: its writes for this turn's commit, its changes as notifications to subscribers,
  /// and the history entries it causes (after `leading`, the entries of the request itself: an impression, an
  /// action) for the same commit and for the analytics stream; with sync, its synced writes become operations for
  /// the account's other devices.
  func record(_ mutation: Mutation, history leading: [HistoryEvent] = []) {
    recordMerged(mutation, history: leading)
    if let sync, !mutation.writes.isEmpty { sync.recordedLocal(mutation) }
  }

  /// Records a mutation that merged other devices' state (or brought the engine to a merged value): persisted,
  /// recorded in the history and notified like any other, never sent back out as operations.
  func recordMerged(_ mutation: Mutation, history leading: [HistoryEvent] = []) {
    turn.stage(mutation.writes)
    if !mutation.changes.isEmpty { turn.changed = true }
    if history.enabled {
      if let streamed = history.record(
        mutation, leading: leading, now: { self.engine.clock.now() }, into: turn, metrics: metrics),
        !streamed.isEmpty && subscriptions.hasAnalyticsSubscribers
      {
        for (session, note) in subscriptions.analyticsNotifications(for: streamed[...]) {
          stage(.notification(note), on: session)
        }
      }
    }
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

  /// Stages output for a connection, to be handed over after this turn's commit.
  func stage(_ item: OutboundStateMachine.Item, on session: Session) {
    if case .notification(let note) = item {
      metrics.notificationsSent[type(of: note.notification).method, default: 0] += 1
    }
    session.outbound.stage(item)
    markDirty(session)
  }

  /// After a commit: stages a page of the history for each analytics subscriber replaying it whose connection has
  /// room (below its high-water mark), and turns live those that caught up. Everything recorded is committed at
  /// this point, so a subscriber that read the history to its end misses nothing by going live. Returns whether a
  /// replay goes on (the caller runs another turn).
  func pumpAnalytics() -> Bool {
    var more = false
    for subscriber in subscriptions.analyticsSubscribers.values where !subscriber.live {
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

/// One request's context: the connection it came on (its lifecycle, locale and subscriptions) and the services.
struct RequestContext {
  let session: Session
  let services: Services
  /// The method being handled, for error messages.
  let method: String

  var engine: Engine { services.engine }
  /// The client's locale: tip copy in results is chosen by it.
  var locale: String? { session.locale }

  func record(_ mutation: Mutation) { services.record(mutation) }

  /// Runs an engine call, mapping its error to the protocol's (naming this method).
  func engine<T>(_ body: (Engine) throws(EngineError) -> T) throws(ResponseError) -> T {
    do {
      return try body(services.engine)
    } catch {
      throw ResponseError(error, method: method)
    }
  }

  /// A registered tip's state in this client's copy.
  func tipState(_ id: String) throws(ResponseError) -> TipStateInfo {
    guard let state = engine.state(of: id) else { throw .unknownTip(id) }
    return TipStateInfo(state, engine: engine, locale: locale)
  }
}

/// The handler of every request type, by method name; built once (``Handlers/table``) and checked against
/// ``Messages/requests`` so that no method is left unanswered.
struct HandlerTable: Sendable {
  /// Decodes the params, runs the handler and encodes its result (the reply's bytes).
  typealias Run = @Sendable (RequestID?, JSONValue?, RequestContext) -> Result<[UInt8], ResponseError>

  /// A method's handler and its slot among the methods (where `/metrics` counts it).
  struct Entry: Sendable {
    var run: Run
    var slot: Int
  }

  private(set) var handlers: [String: Entry] = [:]
  /// Every method, in slot order.
  private(set) var methods: [String] = []

  /// Registers the handler of `R`.
  mutating func on<R: RequestType>(
    _ type: R.Type, _ handler: @escaping @Sendable (R, RequestContext) throws(ResponseError) -> R.Response
  ) {
    precondition(handlers[R.method] == nil, "two handlers for \(R.method)")
    methods.append(R.method)
    handlers[R.method] = Entry(slot: methods.count - 1) { id, params, context in
      if R.isTestingOnly && !context.services.configuration.allowTesting {
        return .failure(.testingDisabled(method: R.method))
      }
      if let refusal = context.services.sync?.refusal(for: R.method) { return .failure(refusal) }
      do throws(ResponseError) {
        let request = try Messages.decode(R.self, params: params)
        let response = try handler(request, context)
        return .success(OutgoingMessage.encodeResult(id: id) { response.write(to: &$0) })
      } catch {
        return .failure(error)
      }
    }
  }

  subscript(method: String) -> Run? { handlers[method]?.run }

  func entry(_ method: String) -> Entry? { handlers[method] }
}

extension HandlerTable.Entry {
  init(slot: Int, _ run: @escaping HandlerTable.Run) {
    self.init(run: run, slot: slot)
  }
}
