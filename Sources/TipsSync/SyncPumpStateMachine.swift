public import TipsLogging

/// The sync pump's decisions as a state machine whose event methods return actions (the shape of the server's
/// `OutboundStateMachine`): no libpq, no loop, no clock here, so every path — connecting, the schema check,
/// `LISTEN`, catch-up, push, pull, `NOTIFY`, failures and the backoff — is tested on its own. ``SyncPump`` performs the
/// actions with libpq on the daemon's loop and reports what happened.
///
/// One statement at a time: a pull when one is needed (after every (re)connect, a `NOTIFY`, or a full page), else a
/// push when the outbox has committed operations.
public struct SyncPumpStateMachine: Sendable {
  public enum Phase: Sendable, Equatable {
    /// Not connected: waiting for the first start or for the backoff before the next attempt.
    case disconnected
    /// Resolving, connecting, checking the schema or asking to LISTEN.
    case connecting
    /// Listening; statements run.
    case connected
    /// The database's `tipsd` schema is newer than this build: nothing is synced.
    case incompatible
    case stopped
  }

  /// A statement the pump runs.
  public enum Statement: Sendable, Equatable {
    /// Create or migrate the schema, and read its version.
    case migrate
    /// `LISTEN` on the account's channel.
    case listen
    /// Read the operations after the cursor.
    case pull
    /// Push the outbox's oldest committed operations.
    case push
  }

  public enum Action: Sendable, Equatable {
    /// Resolve host names and open a new connection.
    case connect
    case run(Statement)
    /// Close the connection (its pending statement fails and is ignored).
    case closeConnection
    /// Connect again after this many seconds.
    case retry(afterSeconds: Double)
    case log(LogLine)
  }

  public struct LogLine: Sendable, Equatable {
    public var level: LogLevel
    public var message: String
    public var metadata: [Pair]

    public struct Pair: Sendable, Equatable {
      public var key: String
      public var value: String
    }

    init(_ level: LogLevel, _ message: String, _ metadata: [(String, String)]) {
      self.level = level
      self.message = message
      self.metadata = metadata.map { Pair(key: $0.0, value: $0.1) }
    }
  }

  /// The server (password redacted) and account, for log lines.
  let server: String
  let account: String
  /// Rows per pull: a full page means more may wait.
  let pullBatch: Int

  public private(set) var phase = Phase.disconnected
  /// A statement is in flight.
  public private(set) var busy = false
  /// A pull is owed (after a (re)connect, a `NOTIFY`, a full page).
  public private(set) var pullNeeded = false
  /// The wait before the next attempt after a failure.
  private var backoff: Backoff
  /// The next backoff.
  public var retryDelay: Double { backoff.next }
  /// Whether the unreachable warning was logged since the last connection (later failures log at debug).
  private var warned = false
  /// The last connection or statement error, cleared on reconnect.
  public private(set) var lastError: String?

  /// What log lines call the other side: "PostgreSQL", or "the hosted node".
  let peer: String

  public init(
    server: String, account: String, pullBatch: Int = 1000, retryMax: Double = 2, peer: String = "PostgreSQL"
  ) {
    self.server = server
    self.account = account
    self.pullBatch = pullBatch
    backoff = Backoff(first: min(0.1, retryMax), cap: retryMax)
    self.peer = peer
  }

  // MARK: Events

  public mutating func start() -> [Action] {
    guard phase == .disconnected else { return [] }
    phase = .connecting
    return [.connect]
  }

  public mutating func stop() -> [Action] {
    guard phase != .stopped else { return [] }
    phase = .stopped
    busy = false
    return [.closeConnection]
  }

  /// The backoff ended.
  public mutating func retryDue() -> [Action] {
    guard phase == .disconnected else { return [] }
    phase = .connecting
    return [.connect]
  }

  /// The connection is open: check the schema.
  public mutating func connected() -> [Action] {
    guard phase == .connecting else { return [] }
    return [.run(.migrate)]
  }

  /// The schema is at `version`.
  public mutating func migrated(version: Int, supported: Int) -> [Action] {
    guard phase == .connecting else { return [] }
    guard version <= supported else {
      phase = .incompatible
      let reason =
        "the database's tipsd schema is version \(version), newer than this tipsd understands (\(supported)); not syncing"
      lastError = reason
      return [.closeConnection, .log(LogLine(.error, "sync disabled", [("reason", reason)]))]
    }
    return [.run(.listen)]
  }

  /// `LISTEN` succeeded: connected. Catch up first (`NOTIFY`s sent while away are gone).
  public mutating func listening(outboxHasWork: Bool) -> [Action] {
    guard phase == .connecting else { return [] }
    phase = .connected
    backoff.succeeded()
    lastError = nil
    warned = false
    pullNeeded = true
    return [.log(LogLine(.info, "sync connected", [("server", server), ("account", account)]))]
      + next(outboxHasWork: outboxHasWork)
  }

  /// A `NOTIFY` on the account's channel.
  public mutating func notified(outboxHasWork: Bool) -> [Action] {
    pullNeeded = true
    return next(outboxHasWork: outboxHasWork)
  }

  /// Operations were committed locally.
  public mutating func kicked(outboxHasWork: Bool) -> [Action] { next(outboxHasWork: outboxHasWork) }

  /// A pull returned `rows` rows.
  public mutating func pulled(rows: Int, outboxHasWork: Bool) -> [Action] {
    busy = false
    if rows >= pullBatch { pullNeeded = true }
    return next(outboxHasWork: outboxHasWork)
  }

  /// A push was committed by PostgreSQL.
  public mutating func pushed(outboxHasWork: Bool) -> [Action] {
    busy = false
    return next(outboxHasWork: outboxHasWork)
  }

  /// A statement failed: the connection is given up.
  public mutating func statementFailed(_ what: String, message: String) -> [Action] {
    connectionFailed("\(what): \(message)")
  }

  /// The connection could not be made or was lost (`message` already scrubbed of the password).
  public mutating func connectionFailed(_ message: String) -> [Action] {
    guard phase == .connecting || phase == .connected else { return [] }
    phase = .disconnected
    busy = false
    // One line: libpq's messages continue on tab-indented lines.
    let line = message.split(whereSeparator: \.isNewline).map { $0.drop { $0 == " " || $0 == "\t" } }
      .joined(separator: " ")
    lastError = line
    var actions: [Action] = [.closeConnection]
    if !warned {
      warned = true
      actions.append(
        .log(
          LogLine(
            .warning, "sync: \(peer) unreachable; serving locally and retrying",
            [("server", server), ("error", line)])))
    } else {
      actions.append(.log(LogLine(.debug, "sync: still unreachable", [("error", line)])))
    }
    actions.append(.retry(afterSeconds: backoff.failed()))
    return actions
  }

  // MARK: The next statement

  private mutating func next(outboxHasWork: Bool) -> [Action] {
    guard phase == .connected, !busy else { return [] }
    if pullNeeded {
      pullNeeded = false
      busy = true
      return [.run(.pull)]
    }
    guard outboxHasWork else { return [] }
    busy = true
    return [.run(.push)]
  }
}
