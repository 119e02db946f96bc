import TipsCatalog
public import TipsEngine
import TipsFraming
import TipsHosted
public import TipsLogging
import TipsProtocol
import TipsStore
import TipsSystem
public import TipsTransport

/// Why the daemon stopped, for the process exit status.
public enum ServerExit: Sendable, Equatable {
  /// stdin closed, a signal, or `exit` after `shutdown`.
  case clean
  /// `exit` without `shutdown` (LSP convention: status 1).
  case exitWithoutShutdown
}

/// One engine and one datastore shared by every connection on one event loop: the wiring of the parts.
///
/// - Bytes from a connection go through its framer to the ``Dispatcher``, which calls a handler (`Handlers/`); the
///   handler mutates the engine through ``Services/record(_:)``, which stages the mutation's writes in the ``Turn``
///   and its changes as notifications (built by the ``SubscriptionRegistry``) on the subscribers' sessions.
/// - At the end of each loop turn (one path, ``endOfTurn()``), the turn's writes are committed in one transaction;
///   then every connection's ``OutboundStateMachine`` releases its staged output to its stream.
/// - A ``TimeDriver`` arms a timer for the engine's next time-driven change.
///
/// The loop, streams and timers are abstractions (`TipsTransport`): libuv in production (``DaemonRunner``), an in-memory
/// loop with manual time in tests.
public final class Server {
  let configuration: ServerConfiguration
  let logger: Logger
  let loop: any EventLoop
  let engine: Engine
  let store: Datastore
  let services: Services
  let dispatcher: Dispatcher
  /// `/metrics`.
  let counters: ServerCounters
  /// When the daemon started (loop milliseconds), for `tipsd_uptime_seconds`.
  private let startedAt: UInt64
  /// The engine instant of the last history prune.
  private var lastPrune: Double = -.infinity
  private(set) var sessions: [UInt64: Session] = [:]
  /// The catalog in force, when the daemon serves one (`--catalog`).
  private(set) var catalogService: CatalogService?
  private var timeDriver: TimeDriver?
  private var housekeeping: (any LoopTimer)?
  private var endOfTurnRequested = false
  /// The buffer a byte stream's output is gathered in during ``flush(_:committed:)``, kept between flushes.
  private var outputBuffer: [UInt8] = []
  private(set) var stopping = false
  private var finished = false
  /// Why the daemon stops (set by `exit` over stdio).
  public private(set) var exitStatus = ServerExit.clean
  /// Called once when the server begins to stop (the daemon closes its listeners).
  public var onStop: (() -> Void)?
  /// Per-peer connection limits (`--max-connections-per-peer`, `--peer-connection-rate`): the Unix socket's peers
  /// (by uid) here in ``accept(_:primary:transport:identity:peer:)``, the TCP listener's (by address) in the
  /// `WebListener`, which shares it.
  public let connectionLimiter: ConnectionLimiter
  /// Refusals are logged at most once per 10 s under a flood, with the count left out.
  private var refusalLog = SampledLog()

  /// Opens the datastore, loads it into a new engine and registers the catalog. Nothing is served until
  /// ``start()``. `clock` replaces the clock `configuration.clock` names (tests tie it to a manual loop).
  public init(
    configuration: ServerConfiguration, logger: Logger, loop: any EventLoop, clock: (any EngineClock)? = nil
  ) throws(ServerError) {
    self.configuration = configuration
    self.logger = logger
    self.loop = loop
    connectionLimiter = ConnectionLimiter(limits: configuration.connectionLimits)
    startedAt = loop.now
    let virtualClock: VirtualClock?
    let engineClock: any EngineClock
    switch configuration.clock {
    case .system:
      virtualClock = nil
      engineClock = clock ?? SystemClock()
    case .virtual(let start):
      let virtual = VirtualClock(now: start)
      virtualClock = virtual
      engineClock = virtual
    }
    // With sync, donations made at one instant are kept in the same order on every device.
    // With sync, holdouts are assigned from the account: every device of it is held out, or none.
    engine = Engine(
      clock: engineClock,
      configuration: EngineConfiguration(
        canonicalDonationOrder: configuration.sync != nil, holdoutAccount: configuration.sync?.account))
    do {
      store = try Datastore(
        path: configuration.datastorePath,
        options: DatastoreOptions(
          fsync: configuration.fsync, recover: configuration.recoverDatastore, maxPages: configuration.datastoreMaxPages
        ))
    } catch {
      throw ServerError("\(error)")
    }
    if let moved = store.recoveredFrom {
      logger.warning("datastore was unreadable; moved it aside and started fresh", [("moved_to", moved)])
    }
    let started = loop.now
    let historyState: HistoryState
    do {
      engine.restore(try store.load())
      historyState = try store.historyState()
    } catch {
      throw ServerError("\(error)")
    }
    let history = HistoryRecorder(
      enabled: configuration.recordsHistory, appClosedEvent: configuration.appClosedEvent, state: historyState)
    logger.info(
      "datastore loaded",
      [("path", store.path), ("schema", String(store.schemaVersion)), ("ms", String(loop.now - started))])
    // Variants are assigned from the install id, so it is settled before any tip is registered.
    /// What happened while the daemon was down (a window expired, a variant was assigned) is recorded with the
    /// start's own writes.
    let startEngine = engine
    let startStore = store
    func commit(_ mutation: Mutation) throws(DatastoreError) {
      try startStore.commit(mutation.writes, history: history.entries(for: mutation, now: startEngine.clock.now()))
    }
    if let id = configuration.installID ?? (engine.installIdentifier == nil ? Self.randomInstallID() : nil) {
      do {
        try commit(try engine.setInstallID(id))
      } catch {
        throw ServerError("cannot store the install id: \(error)")
      }
    }
    if let catalogPath = configuration.catalogPath {
      // The ship-day checks run on the catalog the daemon is about to serve: errors refuse to start, warnings
      // are logged.
      let service = CatalogService(path: catalogPath, messagesDirectory: configuration.messagesDirectory)
      let report = service.load()
      for warning in report.warnings { logger.warning("catalog: \(warning.textLine)") }
      guard let catalog = report.catalog else {
        let errors = report.errors
        throw ServerError(
          "catalog \(catalogPath) has \(errors.count) error\(errors.count == 1 ? "" : "s") (run `tipsd lint` on it):\n"
            + errors.map { "  " + $0.textLine }.joined(separator: "\n"))
      }
      do {
        let mutation = try catalog.register(in: engine)
        history.refreshTrackedEvents(engine)
        try commit(mutation)
      } catch {
        throw ServerError("catalog \(catalogPath): \(error)")
      }
      service.adopt(catalog)
      catalogService = service
      logger.info(
        "catalog registered",
        [("path", catalogPath), ("tips", String(catalog.tips.count)), ("warnings", String(report.warnings.count))])
    }
    history.refreshTrackedEvents(engine)
    counters = ServerCounters(methods: Handlers.table.methods)
    let turn = Turn(store: store, logger: logger, counters: counters)
    services = Services(turn: turn, configuration: configuration, logger: logger, virtualClock: virtualClock)
    dispatcher = Dispatcher(table: Handlers.table, services: services)
    services.resumeInput = { [unowned self] session in
      guard self.sessions[session.id] != nil else { return }
      self.processBufferedInput(session)
    }
    services.requestEndOfTurn = { [unowned self] in self.requestEndOfTurn() }
    services.stopDaemon = { [unowned self] status in
      self.exitStatus = status
      self.beginStop()
    }
    if catalogService != nil {
      services.catalog = catalogService
      services.reloadCatalog = { [unowned self] trigger in self.reloadCatalog(trigger: trigger) }
    }
    if configuration.strictEvents && catalogService?.declaredEvents == nil {
      throw ServerError(
        "--strict-events needs a --catalog that declares its events (\"events\": [{\"id\", \"description\"}])")
    }
    if let hostedConfiguration = configuration.hosted {
      guard let catalogService else { throw ServerError("--hosted needs --catalog FILE") }
      let hosted = try HostedService(
        configuration: hostedConfiguration, services: services, loop: loop, logger: logger, catalog: catalogService,
        clock: engineClock)
      services.hosted = hosted
      hosted.signInLimiter = (connectionLimiter, { [unowned self] in Double(self.loop.now) / 1000 })
      hosted.release = { [unowned self] sessions, success in
        for session in sessions where self.sessions[session.id] != nil {
          _ = self.flush(session, committed: success)
          if session.outbound.hasWork { self.services.markDirty(session) }
        }
      }
      hosted.closeSession = { [unowned self] session, error in
        guard self.sessions[session.id] != nil, !session.outbound.closing else { return }
        self.services.stage(.reply(.error(id: nil, error)), on: session)
        session.closeAfterOwed()
      }
      hosted.reloadCatalog = { [unowned self] trigger in _ = self.reloadCatalog(trigger: trigger) }
      hosted.sessionsOfAccount = { [unowned self] account in
        // Sessions already closing are not counted again (a deletion closes them once, whichever of PostgreSQL's
        // notification and the commit's answer comes first).
        self.sessions.values.filter { $0.principal?.account == account && !$0.outbound.closing }
      }
    } else {
      let tenant = services.makeLocalTenant(engine: engine, history: history)
      do {
        tenant.idempotency.load(
          try store.idempotentReplies(since: System.wallClockSeconds() - configuration.idempotencyWindow))
      } catch {
        throw ServerError("\(error)")
      }
      if let sync = configuration.sync {
        tenant.sync = try SyncService(configuration: sync, store: store, services: services, tenant: tenant)
      }
    }
  }

  /// `--hosted memory:` only (the in-process tests and the fuzzers): the memory store answers as an unreachable
  /// PostgreSQL (`available` false), and fails its next `failNextCommits` commits.
  public func setMemoryStoreFaults(available: Bool, failNextCommits: Int) {
    guard let store = services.hosted?.store as? MemoryHostedStore else { return }
    store.isAvailable = available
    store.failNextCommits = failNextCommits
  }

  /// The version of the catalog in force (`/healthz`).
  var catalogVersion: String? { catalogService?.version }

  /// The daemon's one tenant (a daemon serving one user's state).
  var local: Tenant? { services.local }

  /// A fresh install id: 128 random bits in hex.
  static func randomInstallID() -> String {
    var generator = SystemRandomNumberGenerator()
    let hex = Array("0123456789abcdef")
    return String((0..<32).map { _ in hex[Int(generator.next() % 16)] })
  }

  // MARK: - Lifecycle

  /// Hooks the server onto its loop: the end-of-turn commit, the partial-message housekeeping and (system clock) the
  /// time-driven wake-ups.
  public func start() {
    loop.afterEachTurn { [unowned self] in self.endOfTurn() }
    if services.virtualClock == nil, let local {
      timeDriver = TimeDriver(timer: loop.makeTimer(), engine: engine, logger: logger) { [unowned self] mutation in
        self.services.record(mutation, in: local)
      }
    }
    let tick = loop.makeTimer()
    tick.keepsLoopAlive = false
    tick.start(afterMilliseconds: 1_000, repeatEvery: 1_000) { [unowned self] in
      self.checkPartialMessages()
      self.pruneHistoryIfDue()
    }
    housekeeping = tick
    pruneHistoryIfDue()
    local?.sync?.start(loop: loop)
    services.hosted?.start()
    requestEndOfTurn()
  }

  /// Deletes the stored history older than `--history-days`, whatever the setting was when it was written: at start,
  /// then whenever the engine's clock has moved an hour since the last prune (checked every second by the
  /// housekeeping timer; under the virtual clock, after `clock/advance`). With `--history-days 0` everything goes,
  /// each tip's last recorded eligibility too, once at start: nothing is recorded afterwards.
  func pruneHistoryIfDue() {
    let now = engine.clock.now()
    guard abs(now - lastPrune) >= 3_600 else { return }
    // Hosted: the hosted service prunes PostgreSQL's history (in bounded statements, hourly).
    guard services.hosted == nil else { return }
    guard let history = local?.history else { return }
    pruneIdempotentReplies()
    guard history.enabled || lastPrune == -.infinity else { return }
    lastPrune = now
    do {
      let deleted =
        history.enabled
        ? try store.pruneHistory(before: now - configuration.historyDays * 86_400) : try store.deleteHistory()
      if deleted > 0 { logger.info("pruned the lifecycle history", [("entries", String(deleted))]) }
    } catch {
      logger.warning("cannot prune the lifecycle history", [("error", "\(error)")])
    }
  }

  /// Forgets the idempotency keys older than `--idempotency-hours` (memory and datastore).
  private func pruneIdempotentReplies() {
    let cutoff = System.wallClockSeconds() - configuration.idempotencyWindow
    local?.idempotency.forget(before: cutoff)
    do {
      try store.pruneIdempotentReplies(before: cutoff)
    } catch {
      logger.warning("cannot prune the idempotency keys", [("error", "\(error)")])
    }
  }

  /// Stops accepting, delivers what clients are owed (for at most two seconds), then ``finish()``es.
  public func beginStop() {
    guard !stopping else { return }
    stopping = true
    onStop?()
    onStop = nil
    for session in sessions.values {
      session.closeAfterOwed()
      services.markDirty(session)
    }
    timeDriver?.stop()
    housekeeping?.start(afterMilliseconds: 2_000) { [unowned self] in self.finish() }
    if sessions.isEmpty { finish() }
  }

  /// Commits what is pending, closes every connection and timer and stops the loop. Idempotent.
  public func finish() {
    guard !finished else { return }
    finished = true
    local?.sync?.beforeCommit()
    _ = services.turn.commit(replies: local?.idempotency.takeStaged() ?? [])
    local?.sync?.stop()
    services.hosted?.stop()
    timeDriver?.close()
    housekeeping?.close()
    for session in sessions.values where !session.stream.isClosed {
      session.stream.close(after: false, reason: "daemon stopping")
    }
    loop.stop()
  }

  /// Closes the datastore (after the loop has stopped).
  public func closeDatastore() {
    store.close()
  }

  // MARK: - Connections

  /// Serves a new connection. `primary`: the daemon stops when it closes (stdio). `transport` names how it is
  /// connected (`stdio`, `unix`, `websocket`). `peer` (e.g. `uid:1000`): who is connecting, for the per-peer limits;
  /// nil: not limited. `counted`: the peer was admitted and is released elsewhere (the TCP listener limits by address
  /// before the upgrade); the session keeps it only to charge failed sign-ins to it.
  public func accept(
    _ stream: any ByteStream, primary: Bool = false, transport: String = "unix", identity: (any Sendable)? = nil,
    peer: String? = nil, counted: Bool = false
  ) {
    if stopping {
      stream.close(after: false, reason: "daemon stopping")
      return
    }
    if sessions.count >= configuration.maxConnections {
      let limit = configuration.maxConnections
      refuse(
        stream, .tooManyConnections(limit: limit), "connection limit reached; refusing a client",
        [("limit", String(limit))])
      return
    }
    if let peer, !counted, let refusal = connectionLimiter.admit(peer, now: Double(loop.now) / 1000) {
      let error: ResponseError
      switch refusal {
      case .perPeer(let limit):
        error = .tooManyConnections(scope: refusal.scope, limit: Double(limit), retryAfter: nil, refusal.description)
      case .rate(let limit, let retryAfter):
        error = .tooManyConnections(scope: refusal.scope, limit: limit, retryAfter: retryAfter, refusal.description)
      }
      refuse(
        stream, error, "per-peer connection limit reached; refusing a client",
        [("peer", peer), ("limit", refusal.scope)])
      return
    }
    let session = Session(
      stream: stream, maxMessageSize: configuration.maxMessageSize, highWater: configuration.outgoingHighWater,
      queueLimit: configuration.outgoingQueueLimit, isPrimary: primary, transport: transport)
    session.peer = peer
    session.releasesPeer = !counted
    sessions[session.id] = session
    counters.connectionsAccepted[transport, default: 0] += 1
    if let hosted = services.hosted {
      // Signed in by the WebSocket upgrade's token, or to sign in within --sign-in-timeout.
      if let principal = identity as? Principal { _ = hosted.signedIn(session, as: principal) }
      hosted.accepted(session)
    }
    stream.onData = { [unowned self, unowned session] bytes in self.received(bytes, on: session) }
    stream.onClose = { [unowned self, unowned session] reason in self.closed(session, reason: reason) }
    stream.startReading()
    logger.debug("client connected", [("connection", String(session.id)), ("transport", transport)])
  }

  /// Refuses a new connection: one -32010 error (id null), then close. Logged as a warning at most once per 10 s
  /// (a flood must not turn into a flood of log lines), saying how many refusals were left out meanwhile.
  private func refuse(
    _ stream: any ByteStream, _ error: ResponseError, _ message: String, _ metadata: [(String, String)]
  ) {
    connectionRefused(limit: (error.data?["scope"]?.stringValue) ?? "daemon", message, metadata)
    let refusal = OutgoingMessage.encodeError(id: nil, error: error)
    stream.write(stream.deliversMessages ? refusal : Framer.encode(refusal, as: .newline))
    stream.close(after: true, reason: "connection limit")
  }

  /// Counts a refused connection (`limit`: `daemon`, `peer`, `rate`, or nil for one not counted, e.g. another
  /// user's) and logs it: a warning at most once per 10 s, saying how many were left out meanwhile (at debug level).
  public func connectionRefused(limit: String?, _ message: String, _ metadata: [(String, String)]) {
    if let limit { counters.connectionsRefused[limit, default: 0] += 1 }
    let (log, suppressed) = refusalLog.shouldLog(now: Double(loop.now) / 1000)
    if log {
      logger.warning(message, metadata + (suppressed > 0 ? [("refusals_not_logged", String(suppressed))] : []))
    } else {
      logger.debug(message, metadata)
    }
  }

  /// The number of connections served now.
  public var connectionCount: Int { sessions.count }

  /// `GET /metrics`: the server's counters in the Prometheus text format.
  public func prometheusText() -> String {
    counters.render(
      ServerCounters.Gauges(
        connections: connectionsByTransport, subscriptions: subscriptionCounts,
        datastoreBytes: services.hosted == nil ? try? store.sizeBytes() : nil,
        historyCursor: local?.history.lastCursor ?? 0,
        uptimeSeconds: Double(loop.now - startedAt) / 1000, version: TipsdVersion.server,
        hostedLinks: services.hosted.map { hosted in Link.allCases.map { ($0.rawValue, hosted.isUp($0)) } } ?? [],
        signInThrottled: services.hosted?.signInCounts.throttled, signInFailures: services.hosted?.signInCounts.failures
      ))
  }

  /// Open subscriptions by kind, over every tenant.
  var subscriptionCounts: [String: Int] {
    if let local { return local.subscriptions.countsByKind }
    var counts: [String: Int] = [:]
    for tenant in services.hosted?.tenants.values ?? [:].values {
      for (kind, count) in tenant.subscriptions.countsByKind { counts[kind, default: 0] += count }
    }
    return counts
  }

  /// Connections by transport (`unix`, `websocket`, `stdio`).
  public var connectionsByTransport: [String: Int] {
    var counts: [String: Int] = [:]
    for session in sessions.values { counts[session.transport, default: 0] += 1 }
    return counts
  }

  private func closed(_ session: Session, reason: CloseReason) {
    session.isGone = true
    logger.debug("client disconnected", [("connection", String(session.id)), ("reason", "\(reason)")])
    if let peer = session.peer, session.releasesPeer { connectionLimiter.release(peer) }
    local?.subscriptions.removeAll(of: session)
    services.hosted?.closed(session)
    sessions[session.id] = nil
    services.turn.forget(session)
    if session.isPrimary { beginStop() }
    if stopping && sessions.isEmpty { finish() }
  }

  private func received(_ bytes: UnsafeRawBufferPointer, on session: Session) {
    guard !session.outbound.closing else { return }
    // A whole message (WebSocket) with nothing queued before it: handled in place, from the transport's buffer, with
    // the checks processBufferedInput makes before each message (it is copied only when it has to wait).
    if session.stream.deliversMessages && !session.hasQueuedInput && !session.isWaiting {
      let (wait, action) = session.outbound.mustPauseInput(transportPending: session.stream.pendingWriteBytes)
      if !wait {
        dispatcher.handle(raw: bytes, on: session)
        return
      }
      session.take(bytes)
      if action == .pauseReading { session.stream.stopReading() }
      services.markDirty(session)
      return
    }
    session.take(bytes)
    processBufferedInput(session)
  }

  /// Handles the complete messages the framer holds, one at a time, until the client's output backs up (input
  /// back-pressure: its requests wait — the rest of the read in the framer, later ones in the kernel — rather than
  /// their replies piling up). Checked after every message, so a read full of requests with large replies cannot
  /// overshoot the bound.
  func processBufferedInput(_ session: Session) {
    while !session.outbound.closing && !session.isWaiting {
      let (wait, action) = session.outbound.mustPauseInput(transportPending: session.stream.pendingWriteBytes)
      if wait {
        if action == .pauseReading { session.stream.stopReading() }
        services.markDirty(session)
        return
      }
      if let frame = session.frame, frame.hasMoreToDispatch {
        // The rest of a frame that waited for an account (hosted mode).
        guard dispatcher.continueFrame(frame, on: session) else { return }
        continue
      }
      if !session.stream.deliversMessages {
        // A byte stream: the message is handled in place, from the framer's buffer (no copy of its own).
        guard let event = session.framer.nextInPlace() else { break }
        switch event {
        case .range(let range):
          // A copy of the framer keeps its buffer alive (and unchanged) whatever the request does.
          let framer = session.framer
          guard framer.withBytes(of: range, { dispatcher.handle(raw: $0, on: session) }) else { return }
        case .event(.message(let message)):
          guard dispatcher.handle(message, on: session) else { return }
        case .event(.error(let error)):
          protocolViolation(session, error)
          return
        }
        continue
      }
      guard let event = session.nextInput() else { break }
      switch event {
      case .message(let message):
        // False: it waits for an account (hosted mode); the session was parked and resumes by itself.
        guard dispatcher.handle(message, on: session) else { return }
      case .error(let error):
        protocolViolation(session, error)
        return
      }
    }
    if session.hasPartialMessage {
      if session.partialSince == nil { session.partialSince = loop.now }
    } else {
      session.partialSince = nil
    }
  }

  /// A framing error: reply once with -32600 (id null), then close without reading further.
  private func protocolViolation(_ session: Session, _ error: FramingError) {
    logger.info(
      "closing a connection after a framing error", [("connection", String(session.id)), ("error", "\(error)")])
    services.stage(.reply(.error(id: nil, .framingError("\(error)"))), on: session)
    session.closeAfterOwed()
  }

  private func checkPartialMessages() {
    let limit = UInt64(configuration.partialMessageTimeout * 1000)
    let now = loop.now
    for session in sessions.values {
      guard let since = session.partialSince, now - since >= limit, !session.outbound.closing else { continue }
      logger.info("closing a connection whose message stayed incomplete", [("connection", String(session.id))])
      let seconds = Int(configuration.partialMessageTimeout)
      services.stage(
        .reply(.error(id: nil, .framingError("incomplete message: no complete frame within \(seconds) s"))), on: session
      )
      session.closeAfterOwed()
    }
  }

  // MARK: - End of turn

  private func requestEndOfTurn() {
    guard !endOfTurnRequested else { return }
    endOfTurnRequested = true
    loop.requestEndOfTurn()
  }

  /// The one end-of-turn path: commit the turn's writes once, then hand every connection's staged output to its
  /// stream, resume connections whose output drained, and re-arm the time-driven timer.
  func endOfTurn() {
    endOfTurnRequested = false
    if let hosted = services.hosted {
      hostedEndOfTurn(hosted)
      return
    }
    guard let local else { return }
    local.sync?.beforeCommit()
    let committed = services.turn.commit(replies: local.idempotency.takeStaged())
    if !committed { restoreFromDatastore() }
    if services.turn.changed {
      services.turn.changed = false
      for (session, note) in local.subscriptions.inspectNotifications() {
        services.stage(.notification(note), on: session)
      }
    }
    if local.subscriptions.hasCatchingUp && services.pumpAnalytics() { requestEndOfTurn() }
    local.sync?.afterCommit(committed)
    var resumed: [Session] = []
    for session in services.turn.takeDirty() {
      if flush(session, committed: committed) { resumed.append(session) }
      if session.outbound.hasWork && sessions[session.id] != nil { services.turn.markDirty(session) }
    }
    // Requests left in the framer of a client whose output drained are handled now; their replies go out after the
    // next commit (processBufferedInput requests another end of turn when it stages anything).
    for session in resumed where sessions[session.id] != nil { processBufferedInput(session) }
    // The tips the restore moved back are notified now, after the failed turn's output (an analytics event staged
    // with it would have been dropped).
    if !committed { services.record(engine.advanceTime(), in: local) }
    if !stopping { timeDriver?.reschedule() }
  }

  /// Hosted mode's end of turn: every touched account's changes go to PostgreSQL in one transaction; the output of
  /// the sessions it concerns waits for it (``HostedService``'s commit releases it), the others' is handed over now.
  private func hostedEndOfTurn(_ hosted: HostedService) {
    if services.turn.changed {
      services.turn.changed = false
      for tenant in hosted.tenants.values where tenant.changed {
        tenant.changed = false
        for (session, note) in tenant.subscriptions.inspectNotifications() {
          services.stage(.notification(note), on: session)
        }
      }
    }
    let dirty = services.turn.takeDirty()
    let held = hosted.commitTurn(dirty: dirty)
    var resumed: [Session] = []
    for session in dirty where sessions[session.id] != nil && !held.contains(ObjectIdentifier(session)) {
      guard session.awaitingBatch == nil else { continue }
      if flush(session, committed: true) { resumed.append(session) }
      if session.outbound.hasWork { services.turn.markDirty(session) }
    }
    for session in resumed where sessions[session.id] != nil { processBufferedInput(session) }
    if !stopping { hosted.afterTurn() }
  }

  /// After a failed commit, the engine's durable state, the history recorder's memory (the newest cursor, each
  /// tip's last recorded eligibility) and, with `--sync`, the sync model (outbox, contributions) are read again from
  /// the datastore: nothing the lost turn did (donations,
  /// displays, parameters, history entries) counts afterwards, and the daemon goes on as if its requests — each
  /// answered -32005 — had never been made. What the datastore does not hold is kept (registrations, groups, testing
  /// overrides, transient parameters). Tips whose state this moves back are reported with the engine's next
  /// mutation (``endOfTurn()`` makes one at once).
  ///
  /// Reading back, rather than staging every change until the commit succeeds, keeps the request path as it is (the
  /// engine changes in place); it costs a load of the datastore, on failure only.
  private func restoreFromDatastore() {
    do {
      let snapshot = try store.load()
      let history = try store.historyState()
      engine.restore(snapshot)
      local?.history.restore(history)
      try local?.sync?.restore(from: store)
      local?.idempotency.load(
        try store.idempotentReplies(since: System.wallClockSeconds() - configuration.idempotencyWindow))
    } catch {
      logger.error(
        "cannot read the datastore again after a failed commit; the daemon's state is ahead of it until a restart",
        [("error", "\(error)")])
    }
  }

  /// Performs a connection's output actions; returns true when it resumed reading.
  ///
  /// On a byte stream the turn's messages are framed into one buffer and handed over in one write (one syscall for
  /// a pipelined client's whole turn, not one per reply), written before any other action so order is kept. The
  /// buffer counts as held by the transport for the state machine's high-water decisions, and is handed over as
  /// soon as the two together would reach the high water: every decision is then the one the state machine would
  /// make had each message been written on its own (what the kernel takes of an earlier write only lowers what the
  /// transport holds).
  func flush(_ session: Session, committed: Bool) -> Bool {
    let path = store.path
    let hosted = services.hosted != nil
    func failure(_ id: RequestID?) -> [UInt8] {
      // Hosted: PostgreSQL did not commit it (or the outcome is unknown: the connection broke); the account is read
      // again before its next request, so a retry sees whether it was stored.
      OutgoingMessage.encodeError(
        id: id,
        error: hosted
          ? .unavailable(method: "request", retryAfter: 1, "PostgreSQL did not confirm the commit")
          : .datastoreFailure(path: path))
    }
    // A batch still collecting replies (waiting for an account or a read) keeps those acknowledging this commit.
    session.frame?.commitFinished(success: committed, failure: failure)
    session.outbound.commitFinished(success: committed, failure: failure)
    var resumed = false
    let stream = session.stream
    defer { counters.notificationsCoalesced += UInt64(session.outbound.takeCoalesced()) }
    let gathers = !stream.deliversMessages
    let framing = session.framing
    let highWater = session.outbound.highWater
    var gathered = outputBuffer
    outputBuffer = []
    func handOver() {
      guard !gathered.isEmpty else { return }
      stream.write(gathered)
      gathered.removeAll(keepingCapacity: true)
    }
    // What the transport holds: read again after each hand-over or other action, not for each message.
    var transportPending = stream.pendingWriteBytes
    while true {
      if !gathered.isEmpty && transportPending + gathered.count >= highWater {
        handOver()
        transportPending = stream.pendingWriteBytes
      }
      guard let action = session.outbound.nextAction(transportPending: transportPending + gathered.count) else { break }
      switch action {
      case .write(let payload) where gathers:
        Framer.append(payload, as: framing, to: &gathered)
        continue
      case .writeMessages(let bytes, _) where gathers && framing == .newline:
        gathered.append(contentsOf: bytes)
        continue
      case .writeMessages(let bytes, let ends) where gathers:
        var start = 0
        for end in ends {
          Framer.append(Array(bytes[start..<end - 1]), as: framing, to: &gathered)
          start = end
        }
        continue
      case .writeMessages(let bytes, let ends):
        stream.write(messages: bytes, ends: ends)
      case .write(let payload):
        stream.write(payload)
      case .pauseReading:
        handOver()
        stream.stopReading()
      case .resumeReading:
        handOver()
        stream.startReading()
        resumed = true
      case .close:
        handOver()
        stream.close(after: true, reason: stopping ? stream.daemonStoppingReason : "closed by server")
      case .disconnect(let owed):
        handOver()
        logger.warning(
          "disconnecting a client that is not reading its replies",
          [("connection", String(session.id)), ("queued_bytes", String(owed))])
        stream.close(after: false, reason: "not reading its replies")
      }
      transportPending = stream.pendingWriteBytes
    }
    handOver()
    // The buffer is kept for the next connection's flush, unless one turn made it large.
    if gathered.capacity <= Self.keptOutputCapacity { outputBuffer = gathered }
    return resumed
  }

  /// The largest gathering buffer kept between flushes.
  private static let keptOutputCapacity = 512 << 10
}

/// A failure that stops `tipsd serve` from starting, with an actionable message.
public struct ServerError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
