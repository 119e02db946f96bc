public import TipsLogging
public import TipsRecords
public import TipsTransport

/// What the pump asks of the daemon: queued operations, the cursor, and places to put what it pulled and what
/// the server committed. Loop thread only.
public protocol SyncPumpDelegate: AnyObject {
  /// The oldest operations queued *and committed locally*, at most `limit`: (seq, payload).
  func outboxBatch(_ limit: Int) -> [PendingOperation]
  /// The last cursor applied.
  var cursor: Int64 { get }
  /// Rows pulled from `tipsd.ops` (cursor order), to merge.
  func received(_ rows: [OperationRow])
  /// The device's cursor is behind the operations PostgreSQL keeps: the account's snapshot (`tipsd.snapshots.state`,
  /// as of `cursor`) to merge instead; the pull goes on from `cursor`. False: it could not be merged (the pump waits
  /// for the next notification or reconnect rather than reading it again at once).
  func receivedSnapshot(_ state: String, cursor: Int64) -> Bool
  /// PostgreSQL committed these operations.
  func committed(_ seqs: [Int64])
}

/// The pump between the local outbox and the account's other devices, on the daemon's loop: over PostgreSQL
/// (``PGSyncTransport``) or through a hosted node (``NodeSyncTransport``).
///
/// Connects, checks the schema (PostgreSQL) or signs in (a node), subscribes to the account's changes, catches up by
/// cursor, then pushes the outbox in batches and pulls whenever a notification (or a full page) says there is more.
/// One step at a time. When the connection fails or is lost (the server down, slow or restarted), it retries with a
/// backoff (0.1 s doubling to `retryMax`) and catches up again after every reconnect; meanwhile the daemon serves from
/// its datastore and queues its changes.
///
/// The decisions are ``SyncPumpStateMachine``'s; this class performs its actions with the transport and reports back.
public final class SyncPump {
  public struct Configuration: Sendable {
    public var account: String
    public var device: String
    public var pullBatch = 1000
    public var pushBatch = 500
    public var retryMax: Double = 2
    public var connectTimeout: Double = 10

    public init(account: String, device: String) {
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

  let configuration: Configuration
  public let transport: any SyncTransport
  private let loop: any EventLoop
  private weak var delegate: (any SyncPumpDelegate)?
  private let logger: Logger
  private let wallClock: () -> Double

  private var machine: SyncPumpStateMachine
  private var retryTimer: (any LoopTimer)?
  /// Counts connections, so the completion of a step on a connection given up is ignored.
  private var connection = 0

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
    loop: any EventLoop, configuration: Configuration, transport: any SyncTransport, delegate: any SyncPumpDelegate,
    wallClock: @escaping () -> Double,
    logger: Logger
  ) {
    self.loop = loop
    self.configuration = configuration
    self.transport = transport
    self.delegate = delegate
    self.wallClock = wallClock
    self.logger = logger
    machine = SyncPumpStateMachine(
      server: transport.redacted, account: configuration.account, pullBatch: configuration.pullBatch,
      retryMax: configuration.retryMax, peer: transport.peerName)
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
        connection += 1
        transport.close()
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
    connection += 1
    let current = connection
    transport.open(
      SyncTransportEvents(
        ready: { [weak self] in
          guard let self, self.connection == current else { return }
          self.perform(self.machine.connected())
        },
        failed: { [weak self] message in
          guard let self, self.connection == current else { return }
          self.perform(self.machine.connectionFailed(message))
        },
        changed: { [weak self] in
          guard let self, self.connection == current else { return }
          self.perform(self.machine.notified(outboxHasWork: self.outboxHasWork))
        }))
  }

  /// The completion of a step on the current connection: a failure gives the connection up.
  private func step<T>(_ what: String, _ success: @escaping (T) -> Void) -> (Result<T, SyncTransportError>) -> Void {
    let current = connection
    return { [weak self] result in
      guard let self, self.connection == current else { return }
      switch result {
      case .failure(let error): self.perform(self.machine.statementFailed(what, message: error.message))
      case .success(let value): success(value)
      }
    }
  }

  private func run(_ statement: SyncPumpStateMachine.Statement) {
    switch statement {
    case .migrate:
      transport.handshake(
        step("handshake") { [unowned self] (answer: (version: Int, supported: Int)) in
          self.perform(self.machine.migrated(version: answer.version, supported: answer.supported))
        })
    case .listen:
      transport.listen(
        step("subscribe") { [unowned self] (_: Void) in
          self.perform(self.machine.listening(outboxHasWork: self.outboxHasWork))
        })
    case .pull:
      guard let delegate else { return }
      transport.pull(
        after: delegate.cursor, limit: configuration.pullBatch,
        step("catch-up") { [unowned self] (pulled: PulledOperations) in
          self.lastPullAt = self.wallClock()
          switch pulled {
          case .snapshot(let state, let cursor):
            self.logger.info(
              "sync: this device was behind the operations kept; merging the account's snapshot",
              [("cursor", String(cursor))])
            let merged = self.delegate?.receivedSnapshot(state, cursor: cursor) ?? false
            // Then on from the snapshot's cursor, as after a full page.
            self.perform(
              self.machine.pulled(rows: merged ? self.configuration.pullBatch : 0, outboxHasWork: self.outboxHasWork))
          case .rows(let rows):
            self.pulledCount += rows.count
            if !rows.isEmpty { self.delegate?.received(rows) }
            self.perform(self.machine.pulled(rows: rows.count, outboxHasWork: self.outboxHasWork))
          }
        })
    case .push:
      let batch = delegate?.outboxBatch(configuration.pushBatch) ?? []
      guard !batch.isEmpty else {
        perform(machine.pushed(outboxHasWork: false))
        return
      }
      let seqs = batch.map(\.seq)
      transport.push(
        batch,
        step("push") { [unowned self] (_: Void) in
          self.lastPushAt = self.wallClock()
          self.pushedCount += seqs.count
          self.delegate?.committed(seqs)
          self.perform(self.machine.pushed(outboxHasWork: self.outboxHasWork))
        })
    }
  }
}
