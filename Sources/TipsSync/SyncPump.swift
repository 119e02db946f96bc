public import TipsLogging
public import TipsTransport

/// What the pump asks of the daemon: queued operations, the cursor, and places to put what it pulled and what
/// PostgreSQL committed. Loop thread only.
public protocol SyncPumpDelegate: AnyObject {
  /// The oldest operations queued *and committed locally*, at most `limit`: (seq, payload).
  func outboxBatch(_ limit: Int) -> [(seq: Int64, payload: String)]
  /// The last cursor applied.
  var cursor: Int64 { get }
  /// Rows pulled from `tipsd.ops` (cursor order), to merge.
  func received(_ rows: [SyncPump.Row])
  /// PostgreSQL committed these operations.
  func committed(_ seqs: [Int64])
}

/// The pump between the local outbox and PostgreSQL, on the daemon's loop.
///
/// Connects (non-blocking libpq, see `PGConnection`), creates or migrates the `tipsd` schema, `LISTEN`s on the
/// account's channel, catches up by cursor, then pushes the outbox in batches and pulls whenever a `NOTIFY` (or a full
/// page) says there is more. One statement at a time. When the connection fails or is lost (PostgreSQL down, slow or
/// restarted), it retries with a backoff (0.1 s doubling to `retryMax`) and catches up again after every reconnect;
/// meanwhile the daemon serves from its datastore and queues its changes.
public final class SyncPump {
  public struct Configuration: Sendable {
    public var server: SyncServer
    public var account: String
    public var device: String
    public var pullBatch = 1000
    public var pushBatch = 500
    public var retryMax: Double = 2
    public var connectTimeout: Double = 10

    public init(server: SyncServer, account: String, device: String) {
      self.server = server
      self.account = account
      self.device = device
    }
  }

  /// The connection's state, for `sync/status`.
  public enum State: String, Sendable {
    case connecting, connected, disconnected, stopped
    /// The database's `tipsd` schema is newer than this build: nothing is synced.
    case incompatible
  }

  /// One row of `tipsd.ops`.
  public struct Row: Sendable {
    public var cursor: Int64
    public var device: String
    public var seq: Int64
    public var payload: String
  }

  let configuration: Configuration
  private let loop: any EventLoop
  private weak var delegate: (any SyncPumpDelegate)?
  private let logger: Logger
  private let channel: String
  private let wallClock: () -> Double

  private var connection: PGConnection?
  private var retryTimer: (any LoopTimer)?
  private var retryDelay = 0.1
  /// Ready: schema checked and listening.
  private var ready = false
  private var busy = false
  private var pullNeeded = false
  private var warnedSinceConnected = false
  /// Counts connection attempts, so a resolution finishing after the pump moved on is ignored.
  private var connectAttempt = 0

  public private(set) var state = State.disconnected
  /// Wall-clock seconds of the last successful push and pull.
  public private(set) var lastPushAt: Double?
  public private(set) var lastPullAt: Double?
  /// The last connection or statement error (password scrubbed), cleared on reconnect.
  public private(set) var lastError: String?
  /// Operations pushed and rows pulled since start.
  public private(set) var pushedCount = 0
  public private(set) var pulledCount = 0

  public init(
    loop: any EventLoop, configuration: Configuration, delegate: any SyncPumpDelegate, wallClock: @escaping () -> Double,
    logger: Logger
  ) {
    self.loop = loop
    self.configuration = configuration
    self.delegate = delegate
    self.wallClock = wallClock
    self.logger = logger
    channel = PGSchema.channel(account: configuration.account)
  }

  private func log(_ level: LogLevel, _ message: String, _ metadata: [(String, String)] = []) {
    logger.log(level, message, metadata)
  }

  /// Starts connecting.
  public func start() {
    guard state != .stopped else { return }
    connect()
  }

  /// New operations were committed locally: push them if connected.
  public func kick() { pump() }

  /// Closes the connection for good.
  public func stop() {
    state = .stopped
    connectAttempt += 1
    ready = false
    retryTimer?.close()
    retryTimer = nil
    connection?.close()
    connection = nil
  }

  // MARK: Connection

  private func connect() {
    guard state != .stopped && state != .incompatible else { return }
    state = .connecting
    let server = configuration.server
    guard server.needsResolution else {
      open(hostaddr: nil)
      return
    }
    // libpq would resolve host names with a blocking getaddrinfo: resolve them on libuv's thread pool instead and
    // hand libpq the addresses (`hostaddr`; `host` still names the server for TLS and the password file).
    connectAttempt += 1
    let attempt = connectAttempt
    var addresses = [String](repeating: "", count: server.hosts.count)
    var pending = server.hosts.indices.filter { SyncServer.isName(server.hosts[$0]) }
    func next() {
      guard attempt == connectAttempt, state == .connecting else { return }
      guard let index = pending.first else {
        open(hostaddr: addresses.joined(separator: ","))
        return
      }
      pending.removeFirst()
      loop.resolve(host: server.hosts[index]) { [weak self] result in
        guard let self, attempt == self.connectAttempt, self.state == .connecting else { return }
        switch result {
        case .success(let address):
          addresses[index] = address
          next()
        case .failure(let error):
          self.connectionFailed("\(error)")
        }
      }
    }
    next()
  }

  /// Opens the connection (after resolving host names, if any).
  private func open(hostaddr: String?) {
    let server = configuration.server
    var keywords = ["dbname", "application_name"]
    var values = [server.connectionString, "tipsd"]
    if let hostaddr {
      keywords.append("hostaddr")
      values.append(hostaddr)
    }
    let connection = PGConnection(
      loop: loop, keywords: keywords, values: values, connectTimeout: configuration.connectTimeout)
    self.connection = connection
    connection.onReady = { [unowned self] in self.migrate() }
    connection.onFailure = { [unowned self] message in self.lost(message) }
    connection.onNotification = { [unowned self] channel, _ in
      guard channel == self.channel else { return }
      self.pullNeeded = true
      self.pump()
    }
    connection.start()
  }

  private func migrate() {
    connection?.send(PGSchema.migrate) { [unowned self] result in
      switch result {
      case .failure(let error):
        self.failStatement("cannot create or migrate the tipsd schema", error)
      case .success(let results):
        let version = results.last { !$0.rows.isEmpty }?.rows.first?.first.flatMap { $0.flatMap { Int($0) } } ?? 0
        guard version <= PGSchema.version else {
          self.state = .incompatible
          self.lastError = "the database's tipsd schema is version \(version), newer than this tipsd understands "
            + "(\(PGSchema.version)); not syncing"
          self.log(.error, "sync disabled", [("reason", self.lastError ?? "")])
          self.connection?.close()
          self.connection = nil
          return
        }
        self.listen()
      }
    }
  }

  private func listen() {
    connection?.send("LISTEN \(channel)") { [unowned self] result in
      if case .failure(let error) = result {
        self.failStatement("cannot LISTEN", error)
        return
      }
      self.ready = true
      self.state = .connected
      self.retryDelay = 0.1
      self.lastError = nil
      self.warnedSinceConnected = false
      self.log(.info, "sync connected", [("server", self.configuration.server.redacted), ("account", self.configuration.account)])
      // Catch up after every (re)connect: NOTIFYs sent while we were away are gone.
      self.pullNeeded = true
      self.pump()
    }
  }

  private func failStatement(_ what: String, _ error: PGError) {
    lost("\(what): \(error.message)")
  }

  /// The connection failed or was lost: retry after the backoff.
  private func lost(_ message: String) {
    // Once per connection: a lost connection fails its pending statement and then reports itself.
    guard let failed = connection else { return }
    connection = nil
    failed.close()
    connectionFailed(message)
  }

  /// The attempt failed (a connection lost, a name not resolved): retry after the backoff.
  private func connectionFailed(_ message: String) {
    ready = false
    busy = false
    guard state != .stopped && state != .incompatible else { return }
    state = .disconnected
    // One line: libpq's messages continue on tab-indented lines.
    let scrubbed = configuration.server.scrub(message).split(whereSeparator: \.isNewline)
      .map { $0.drop { $0 == " " || $0 == "\t" } }.joined(separator: " ")
    lastError = scrubbed
    if !warnedSinceConnected {
      warnedSinceConnected = true
      log(
        .warning, "sync: PostgreSQL unreachable; serving locally and retrying",
        [("server", configuration.server.redacted), ("error", scrubbed)])
    } else {
      log(.debug, "sync: still unreachable", [("error", scrubbed)])
    }
    let delay = retryDelay
    retryDelay = min(retryDelay * 2, configuration.retryMax)
    let timer = retryTimer ?? loop.makeTimer()
    retryTimer = timer
    timer.start(afterMilliseconds: UInt64(delay * 1000)) { [unowned self] in self.connect() }
  }

  // MARK: Pulling and pushing

  /// Runs the next statement: a pull when one is needed, else a push of what is queued.
  private func pump() {
    guard ready, !busy, let connection, let delegate else { return }
    if pullNeeded {
      pullNeeded = false
      busy = true
      let parameters: [String?] = [configuration.account, String(delegate.cursor), String(configuration.pullBatch)]
      connection.send(PGSchema.pull, parameters: parameters) { [unowned self] result in
        self.busy = false
        switch result {
        case .failure(let error):
          self.failStatement("catch-up query failed", error)
        case .success(let results):
          let rows = (results.first?.rows ?? []).compactMap { row -> Row? in
            guard row.count == 4, let cursor = row[0].flatMap({ Int64($0) }), let device = row[1],
              let seq = row[2].flatMap({ Int64($0) }), let payload = row[3]
            else { return nil }
            return Row(cursor: cursor, device: device, seq: seq, payload: payload)
          }
          self.lastPullAt = self.wallClock()
          self.pulledCount += rows.count
          if !rows.isEmpty { self.delegate?.received(rows) }
          if rows.count >= self.configuration.pullBatch { self.pullNeeded = true }
          self.pump()
        }
      }
      return
    }
    let batch = delegate.outboxBatch(configuration.pushBatch)
    guard !batch.isEmpty else { return }
    busy = true
    let seqs = batch.map(\.seq)
    let parameters: [String?] = [
      configuration.account, configuration.device, channel, PGSchema.integerArray(seqs),
      PGSchema.textArray(batch.map(\.payload)),
    ]
    connection.send(PGSchema.push, parameters: parameters) { [unowned self] result in
      self.busy = false
      switch result {
      case .failure(let error):
        self.failStatement("push failed", error)
      case .success:
        self.lastPushAt = self.wallClock()
        self.pushedCount += seqs.count
        self.delegate?.committed(seqs)
        self.pump()
      }
    }
  }
}
