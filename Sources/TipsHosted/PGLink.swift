import TipsLogging
import TipsSync
import TipsSystem
import TipsTransport

/// One PostgreSQL connection a hosted node keeps up on its loop: it connects (host names resolved off the loop),
/// creates or migrates the `tipsd` schema, enters pipeline mode and prepares its statements — or, for the listener,
/// `LISTEN`s on the fleet's channel — and when the connection fails or is lost it fails what was in flight and
/// connects again after a backoff (``Backoff``: 0.1 s doubling to `retryMax`). Its life is ``LinkStateMachine``'s
/// (a device's sync pump runs the same machine); this class performs the machine's actions with libpq. libpq picks
/// the server: with a multi-host URL and `target_session_attrs=read-write`, the primary, whichever it is now.
///
/// **No answer waits without end.** A link whose oldest batch has waited `answerTimeout` seconds (a server that
/// died without closing the connection, a cut or black-holed network, a COMMIT held by a synchronous standby that is
/// away) is declared lost: what was in flight fails — a commit's outcome is then unknown, and the node reads the
/// account again — and it connects anew. The listener sends `SELECT 1` every `answerTimeout / 3` seconds, so a
/// listener that hears nothing because its connection is dead is found out the same way.
///
/// Loop thread only.
final class PGLink {
  enum Role {
    /// Pipelined batches (writes, loads, reads): `setup` runs once per connection (session settings), then the
    /// statements are prepared.
    case pipelined(prepare: [(name: String, sql: String)], setup: [String] = [])
    /// `LISTEN`s on these channels; delivers their notifications.
    case listener(channels: [String])
  }

  enum State: Equatable {
    case down, connecting, ready
    /// The database's `tipsd` schema is newer than this build: nothing is served.
    case incompatible
    case stopped
  }

  let name: String
  private let loop: any EventLoop
  private let server: SyncServer
  private let role: Role
  private let connectTimeout: Double
  private let answerTimeout: Double
  private let applicationName: String
  private let logger: Logger
  /// Checks the oldest batch's wait (and, for the listener, sends its keepalive) every second while connected.
  private var watchdog: (any LoopTimer)?
  private var sinceKeepalive: Double = 0

  private var connection: PGConnection?
  private var retryTimer: (any LoopTimer)?
  /// The connection's life (connect, migrate, prepare or listen, ready, backoff): the state machine a device's sync
  /// pump runs too; this class performs its actions.
  private var machine: LinkStateMachine
  /// Which connection attempt is current (a late answer to an older one is ignored).
  private var attempt = 0

  /// The state last reported (``onStateChange``): updated once the machine's actions are performed, so what waited
  /// on a lost connection is failed while the link still reads as it was.
  private(set) var state = State.down
  /// The last connection or statement error (password scrubbed).
  var lastError: String? { machine.lastError }
  /// The state changed (ready or not).
  var onStateChange: ((State) -> Void)?
  /// The connection is being given up: called before what waited on it is failed.
  var onLosing: (() -> Void)?
  /// The results of a pipelined link's `setup` queries, on each new connection, just before it is ready.
  var onSetup: (([PGResult]) -> Void)?
  /// A notification on a listened channel: (channel, payload).
  var onNotification: ((String, String) -> Void)?

  init(
    name: String, loop: any EventLoop, server: SyncServer, role: Role, connectTimeout: Double, retryMax: Double,
    answerTimeout: Double = 15, node: String? = nil, logger: Logger
  ) {
    self.name = name
    // `tipsd-listener node-1`: pg_stat_activity tells a fleet's links apart (PostgreSQL keeps 63 bytes of it).
    var application = "tipsd-\(name)" + (node.map { " \($0)" } ?? "")
    while application.utf8.count > 63 { application.removeLast() }
    applicationName = application
    self.loop = loop
    self.server = server
    self.role = role
    self.connectTimeout = connectTimeout
    machine = LinkStateMachine(
      retryMax: retryMax,
      voice: LinkStateMachine.Voice(
        unreachable: { line in
          .init(.warning, "hosted: PostgreSQL unreachable; retrying", [("connection", name), ("error", line)])
        },
        stillUnreachable: { _ in nil },
        ready: { afterFailure in
          afterFailure ? .init(.info, "hosted: PostgreSQL reachable again", [("connection", name)]) : nil
        },
        incompatible: { reason in
          .init(.error, "hosted: PostgreSQL's schema is too new; not serving", [("reason", reason)])
        }))
    self.answerTimeout = answerTimeout
    self.logger = logger
  }

  var isReady: Bool { state == .ready }

  func start() { perform(machine.start()) }

  func stop() {
    attempt += 1
    retryTimer?.close()
    retryTimer = nil
    watchdog?.close()
    watchdog = nil
    perform(machine.stop())
  }

  /// Sends a batch (one transaction); fails at once when the link is not ready.
  func send(_ statements: [PGStatement], completion: @escaping (Result<[PGResult], HostedError>) -> Void) {
    guard state == .ready, let connection else {
      let why =
        machine.phase == .preparing
        ? "connected, still setting the connection up (a reader first waits until the synchronous standby has the "
          + "primary's WAL)" : lastError ?? "not connected yet"
      completion(.failure(HostedError("PostgreSQL is unavailable: \(why)")))
      return
    }
    sentAt.append(System.monotonicSeconds())
    connection.sendBatch(statements) { [weak self, server] result in
      // Each batch is answered once, in the order sent (a lost connection fails them all, in order).
      if let self, !self.sentAt.isEmpty { self.sentAt.removeFirst() }
      completion(result.mapError { HostedError(server.scrub($0.message), rolledBack: $0.rolledBack) })
    }
  }

  /// When the batches in flight were sent (monotonic seconds), oldest first.
  private var sentAt: [Double] = []

  /// Batches sent and not yet answered.
  var inFlight: Int { connection?.batchesInFlight ?? 0 }

  /// Seconds the oldest batch in flight has waited for its answer (nil: none waits) — a COMMIT waiting for a
  /// synchronous standby that is away grows it.
  var oldestInFlightAge: Double? { sentAt.first.map { System.monotonicSeconds() - $0 } }

  // MARK: Performing the machine's actions

  private func perform(_ actions: [LinkStateMachine.Action]) {
    for action in actions {
      switch action {
      case .connect: connect()
      case .migrate: migrate()
      case .prepare: prepare()
      case .closeConnection: closeConnection()
      case .retry(let delay):
        let timer = retryTimer ?? loop.makeTimer()
        timer.keepsLoopAlive = false
        retryTimer = timer
        timer.start(afterMilliseconds: UInt64(delay * 1000)) { [weak self] in
          guard let self else { return }
          self.perform(self.machine.retryDue())
        }
      case .log(let line):
        logger.log(line.level, line.message, line.metadata.map { ($0.key, $0.value) })
      }
    }
    let now: State =
      switch machine.phase {
      case .disconnected: .down
      case .connecting, .migrating, .preparing: .connecting
      case .ready: .ready
      case .incompatible: .incompatible
      case .stopped: .stopped
      }
    if now == .ready && watchdog == nil {
      sinceKeepalive = 0
      let timer = loop.makeTimer()
      timer.keepsLoopAlive = false
      timer.start(afterMilliseconds: 1_000, repeatEvery: 1_000) { [unowned self] in self.watch() }
      watchdog = timer
    }
    guard state != now else { return }
    state = now
    // Stopping is the owner's doing: it is not told.
    if now != .stopped { onStateChange?(now) }
  }

  /// A failure on the current connection (or attempt): scrubbed of the password, one line.
  private func failed(_ message: String) { perform(machine.failed(server.scrub(message))) }

  private func closeConnection() {
    guard let closing = connection else { return }
    // Given up after a failure (not stopped, not refused for its schema): the owner learns it before what waited
    // on the connection fails.
    if machine.phase == .disconnected { onLosing?() }
    connection = nil
    closing.close()
    sentAt = []
  }

  // MARK: Connecting

  private func connect() {
    attempt += 1
    let current = attempt
    PGConnector.make(
      loop: loop, server: server, applicationName: applicationName, connectTimeout: connectTimeout,
      isCurrent: { [weak self] in self.map { current == $0.attempt && $0.machine.phase == .connecting } ?? false }
    ) { [weak self] result in
      guard let self, current == self.attempt else { return }
      switch result {
      case .success(let connection): self.open(connection)
      case .failure(let error): self.failed(error.message)
      }
    }
  }

  private func open(_ connection: PGConnection) {
    self.connection = connection
    connection.onReady = { [unowned self] in self.perform(self.machine.connected()) }
    connection.onFailure = { [unowned self] message in
      guard self.connection === connection else { return }
      self.failed(message)
    }
    connection.onNotification = { [unowned self] channel, payload in self.onNotification?(channel, payload) }
    connection.start()
  }

  private func migrate() {
    connection?.send(PGSchema.migrate) { [unowned self] result in
      switch result {
      case .failure(let error):
        self.failed("cannot create or migrate the tipsd schema: \(error.message)")
      case .success(let results):
        let version = results.last { !$0.rows.isEmpty }?.rows.first?.first.flatMap { $0.flatMap { Int($0) } } ?? 0
        self.perform(self.machine.migrated(version: version, supported: PGSchema.version))
      }
    }
  }

  private func prepare() {
    guard let connection else { return }
    switch role {
    case .listener(let channels):
      connection.send(channels.map { "LISTEN \($0);" }.joined(separator: " ")) { [unowned self] result in
        if case .failure(let error) = result {
          self.failed("cannot LISTEN: \(error.message)")
          return
        }
        self.perform(self.machine.prepared())
      }
    case .pipelined(let statements, let setup):
      guard connection.enterPipelineMode() else {
        failed("cannot enter pipeline mode")
        return
      }
      guard !statements.isEmpty || !setup.isEmpty else {
        perform(machine.prepared())
        return
      }
      let batch = setup.map { PGStatement.query($0) } + statements.map { .prepare($0.name, $0.sql) }
      connection.sendBatch(batch) { [unowned self] result in
        switch result {
        case .failure(let error):
          self.failed("cannot prepare statements: \(error.message)")
          return
        case .success(let results):
          self.onSetup?(Array(results.prefix(setup.count)))
        }
        self.perform(self.machine.prepared())
      }
    }
  }

  /// Once a second while connected: a link whose oldest batch waited `answerTimeout` is lost; the listener's
  /// keepalive goes out every `answerTimeout / 3`.
  private func watch() {
    guard state == .ready, let connection else { return }
    let actions = machine.waited(oldestInFlightAge, timeout: answerTimeout)
    guard actions.isEmpty else { return perform(actions) }
    guard case .listener = role else { return }
    sinceKeepalive += 1
    guard sinceKeepalive >= max(1, answerTimeout / 3) else { return }
    sinceKeepalive = 0
    sentAt.append(System.monotonicSeconds())
    connection.send("SELECT 1") { [weak self] _ in
      if let self, !self.sentAt.isEmpty { self.sentAt.removeFirst() }
    }
  }
}
