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
  /// The device's cursor is behind the operations PostgreSQL keeps: the account's snapshot (`tipsd.snapshots.state`,
  /// as of `cursor`) to merge instead; the pull goes on from `cursor`. False: it could not be merged (the pump waits
  /// for the next notification or reconnect rather than reading it again at once).
  func receivedSnapshot(_ state: String, cursor: Int64) -> Bool
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
///
/// The decisions are ``SyncPumpStateMachine``'s; this class performs its actions with libpq and reports back.
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

  private var machine: SyncPumpStateMachine
  private var connection: PGConnection?
  private var retryTimer: (any LoopTimer)?
  /// Counts connection attempts, so a resolution finishing after the pump moved on is ignored.
  private var connectAttempt = 0

  public var state: State {
    switch machine.phase {
    case .disconnected: .disconnected
    case .connecting: .connecting
    case .connected: .connected
    case .incompatible: .incompatible
    case .stopped: .stopped
    }
  }

  /// Wall-clock seconds of the last successful push and pull.
  public private(set) var lastPushAt: Double?
  public private(set) var lastPullAt: Double?
  /// The last connection or statement error (password scrubbed), cleared on reconnect.
  public var lastError: String? { machine.lastError }
  /// Operations pushed and rows pulled since start.
  public private(set) var pushedCount = 0
  public private(set) var pulledCount = 0

  public init(
    loop: any EventLoop, configuration: Configuration, delegate: any SyncPumpDelegate,
    wallClock: @escaping () -> Double,
    logger: Logger
  ) {
    self.loop = loop
    self.configuration = configuration
    self.delegate = delegate
    self.wallClock = wallClock
    self.logger = logger
    channel = PGSchema.channel(account: configuration.account)
    machine = SyncPumpStateMachine(
      server: configuration.server.redacted, account: configuration.account, pullBatch: configuration.pullBatch,
      retryMax: configuration.retryMax)
  }

  private func log(_ level: LogLevel, _ message: String, _ metadata: [(String, String)] = []) {
    logger.log(level, message, metadata)
  }

  /// Starts connecting.
  public func start() { perform(machine.start()) }

  /// New operations were committed locally: push them if connected.
  public func kick() { perform(machine.kicked(outboxHasWork: outboxHasWork)) }

  /// Closes the connection for good.
  public func stop() {
    connectAttempt += 1
    retryTimer?.close()
    retryTimer = nil
    perform(machine.stop())
  }

  private var outboxHasWork: Bool { !(delegate?.outboxBatch(1).isEmpty ?? true) }

  // MARK: Performing the machine's actions

  private func perform(_ actions: [SyncPumpStateMachine.Action]) {
    for action in actions {
      switch action {
      case .connect: connect()
      case .run(let statement): run(statement)
      case .closeConnection:
        connection?.close()
        connection = nil
      case .retry(let seconds):
        let timer = retryTimer ?? loop.makeTimer()
        retryTimer = timer
        timer.start(afterMilliseconds: UInt64(seconds * 1000)) { [unowned self] in self.perform(self.machine.retryDue())
        }
      case .log(let line):
        log(line.level, line.message, line.metadata.map { ($0.key, $0.value) })
      }
    }
  }

  private func connect() {
    connectAttempt += 1
    let attempt = connectAttempt
    PGConnector.make(
      loop: loop, server: configuration.server, applicationName: "tipsd", connectTimeout: configuration.connectTimeout,
      isCurrent: { [weak self] in self.map { attempt == $0.connectAttempt && $0.machine.phase == .connecting } ?? false
      }
    ) { [weak self] result in
      guard let self else { return }
      switch result {
      case .success(let connection):
        self.connection = connection
        connection.onReady = { [unowned self] in self.perform(self.machine.connected()) }
        connection.onFailure = { [unowned self, unowned connection] message in
          guard self.connection === connection else { return }
          self.perform(self.machine.connectionFailed(self.configuration.server.scrub(message)))
        }
        connection.onNotification = { [unowned self] channel, _ in
          guard channel == self.channel else { return }
          self.perform(self.machine.notified(outboxHasWork: self.outboxHasWork))
        }
        connection.start()
      case .failure(let error):
        self.perform(self.machine.connectionFailed(self.configuration.server.scrub(error.message)))
      }
    }
  }

  /// Sends one statement on the current connection; its completion is ignored once the connection was replaced.
  private func send(
    _ sql: String, parameters: [String?]? = nil, failure what: String,
    _ success: @escaping ([PGResult]) -> Void
  ) {
    guard let connection else { return }
    connection.send(sql, parameters: parameters) { [weak self, weak connection] result in
      guard let self, let connection, self.connection === connection else { return }
      switch result {
      case .failure(let error):
        self.perform(self.machine.statementFailed(what, message: self.configuration.server.scrub(error.message)))
      case .success(let results):
        success(results)
      }
    }
  }

  private func run(_ statement: SyncPumpStateMachine.Statement) {
    switch statement {
    case .migrate:
      send(PGSchema.migrate, failure: "cannot create or migrate the tipsd schema") { [unowned self] results in
        let version = results.last { !$0.rows.isEmpty }?.rows.first?.first.flatMap { $0.flatMap { Int($0) } } ?? 0
        self.perform(self.machine.migrated(version: version, supported: PGSchema.version))
      }
    case .listen:
      send("LISTEN \(channel)", failure: "cannot LISTEN") { [unowned self] _ in
        self.perform(self.machine.listening(outboxHasWork: self.outboxHasWork))
      }
    case .pull:
      guard let delegate else { return }
      let parameters: [String?] = [
        configuration.account, configuration.device, String(delegate.cursor), String(configuration.pullBatch),
      ]
      send(PGSchema.pullAsDevice, parameters: parameters, failure: "catch-up query failed") { [unowned self] results in
        var snapshot: (state: String, cursor: Int64)?
        let rows = (results.first?.rows ?? []).compactMap { row -> Row? in
          guard row.count == 4, let cursor = row[0].flatMap({ Int64($0) }), let seq = row[2].flatMap({ Int64($0) }),
            let payload = row[3]
          else { return nil }
          if seq == -1 {
            snapshot = (payload, cursor)
            return nil
          }
          guard let device = row[1] else { return nil }
          return Row(cursor: cursor, device: device, seq: seq, payload: payload)
        }
        self.lastPullAt = self.wallClock()
        if let snapshot {
          self.logger.info(
            "sync: this device was behind the operations kept; merging the account's snapshot",
            [("cursor", String(snapshot.cursor))])
          let merged = self.delegate?.receivedSnapshot(snapshot.state, cursor: snapshot.cursor) ?? false
          // Then on from the snapshot's cursor, as after a full page.
          self.perform(
            self.machine.pulled(rows: merged ? self.configuration.pullBatch : 0, outboxHasWork: self.outboxHasWork))
          return
        }
        self.pulledCount += rows.count
        if !rows.isEmpty { self.delegate?.received(rows) }
        self.perform(self.machine.pulled(rows: rows.count, outboxHasWork: self.outboxHasWork))
      }
    case .push:
      let batch = delegate?.outboxBatch(configuration.pushBatch) ?? []
      guard !batch.isEmpty else {
        perform(machine.pushed(outboxHasWork: false))
        return
      }
      let seqs = batch.map(\.seq)
      let parameters: [String?] = [
        configuration.account, configuration.device, channel, PGSchema.integerArray(seqs),
        PGSchema.textArray(batch.map(\.payload)),
      ]
      send(PGSchema.push, parameters: parameters, failure: "push failed") { [unowned self] _ in
        self.lastPushAt = self.wallClock()
        self.pushedCount += seqs.count
        self.delegate?.committed(seqs)
        self.perform(self.machine.pushed(outboxHasWork: self.outboxHasWork))
      }
    }
  }
}
