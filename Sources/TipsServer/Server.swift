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
  let startedAt: UInt64
  /// The engine instant of the last history prune.
  var lastPrune: Double = -.infinity
  internal(set) var sessions: [UInt64: Session] = [:]
  /// The catalog in force, when the daemon serves one (`--catalog`).
  internal(set) var catalogService: CatalogService?
  var timeDriver: TimeDriver?
  var housekeeping: (any LoopTimer)?
  var endOfTurnRequested = false
  /// The buffer a byte stream's output is gathered in during ``flush(_:committed:)``, kept between flushes.
  var outputBuffer: [UInt8] = []
  internal(set) var stopping = false
  var finished = false
  /// Why the daemon stops (set by `exit` over stdio).
  public private(set) var exitStatus = ServerExit.clean
  /// Called once when the server begins to stop (the daemon closes its listeners).
  public var onStop: (() -> Void)?
  /// Per-peer connection limits (`--max-connections-per-peer`, `--peer-connection-rate`): the Unix socket's peers
  /// (by uid) here in ``accept(_:primary:transport:identity:peer:)``, the TCP listener's (by address) in the
  /// `WebListener`, which shares it.
  public let connectionLimiter: ConnectionLimiter
  /// Refusals are logged at most once per 10 s under a flood, with the count left out.
  var refusalLog = SampledLog()

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
      services.mode = hosted
      hosted.signInLimiter = (connectionLimiter, { [unowned self] in Double(self.loop.now) / 1000 })
      hosted.release = { [unowned self] sessions, success, firstReplies in
        for session in sessions where self.sessions[session.id] != nil {
          _ = self.flush(session, committed: success, firstReplies: firstReplies[ObjectIdentifier(session)] ?? [])
          if session.outbound.hasWork { self.services.markDirty(session) }
        }
      }
      hosted.closeSession = { [unowned self] session, error in
        guard self.sessions[session.id] != nil, !session.outbound.closing else { return }
        self.services.stage(.reply(.error(id: nil, error)), on: session)
        session.closeAfterOwed()
      }
      hosted.reloadCatalog = { [unowned self] trigger in _ = self.reloadCatalog(trigger: trigger) }
      if let store = hosted.store as? HostedStore {
        hosted.catalogs = HostedCatalogs(store: store, hosted: hosted, loop: loop, logger: logger) {
          [unowned self] catalog, digest, trigger in
          self.applyCatalog(
            CatalogReport(catalog: catalog, diagnostics: [], files: []), digest: digest, trigger: trigger
          )
          .applied
        }
      }
      hosted.sessionsOfAccount = { [unowned self] account in
        // Sessions already closing are not counted again (a deletion closes them once, whichever of PostgreSQL's
        // notification and the commit's answer comes first).
        self.sessions.values.filter { $0.principal?.account == account && !$0.outbound.closing }
      }
    } else {
      services.mode = LocalCommitter(server: self, services: services)
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
      self.services.mode.housekeep()
    }
    housekeeping = tick
    services.mode.housekeep()
    services.mode.start()
    requestEndOfTurn()
  }

  /// Deletes the stored history older than `--history-days`, whatever the setting was when it was written: at start,
  /// then whenever the engine's clock has moved an hour since the last prune (checked every second by the
  /// housekeeping timer; under the virtual clock, after `clock/advance`). With `--history-days 0` everything goes,
  /// each tip's last recorded eligibility too, once at start: nothing is recorded afterwards.
  func pruneHistoryIfDue() {
    let now = engine.clock.now()
    guard abs(now - lastPrune) >= 3_600 else { return }
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
  func pruneIdempotentReplies() {
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
    services.mode.stop()
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
}

/// A failure that stops `tipsd serve` from starting, with an actionable message.
public struct ServerError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
