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

  public typealias LogLine = LinkStateMachine.LogLine

  /// The server (password redacted) and account, for log lines.
  let server: String
  let account: String
  /// Rows per pull: a full page means more may wait.
  let pullBatch: Int

  /// The connection's life: connect, migrate, `LISTEN`, back off (``LinkStateMachine``, as a hosted node's links).
  private var link: LinkStateMachine
  public var phase: Phase {
    switch link.phase {
    case .disconnected: .disconnected
    case .connecting, .migrating, .preparing: .connecting
    case .ready: .connected
    case .incompatible: .incompatible
    case .stopped: .stopped
    }
  }
  /// A statement is in flight.
  public private(set) var busy = false
  /// A pull is owed (after a (re)connect, a `NOTIFY`, a full page).
  public private(set) var pullNeeded = false
  /// The next backoff.
  public var retryDelay: Double { link.retryDelay }
  /// The last connection or statement error, cleared on reconnect.
  public var lastError: String? { link.lastError }

  /// What log lines call the other side: "PostgreSQL", or "the hosted node".
  let peer: String

  public init(
    server: String, account: String, pullBatch: Int = 1000, retryMax: Double = 2, peer: String = "PostgreSQL"
  ) {
    self.server = server
    self.account = account
    self.pullBatch = pullBatch
    self.peer = peer
    link = LinkStateMachine(
      retryMax: retryMax,
      voice: LinkStateMachine.Voice(
        unreachable: { line in
          LogLine(
            .warning, "sync: \(peer) unreachable; serving locally and retrying", [("server", server), ("error", line)])
        },
        stillUnreachable: { line in LogLine(.debug, "sync: still unreachable", [("error", line)]) },
        ready: { _ in LogLine(.info, "sync connected", [("server", server), ("account", account)]) },
        incompatible: { reason in LogLine(.error, "sync disabled", [("reason", reason + "; not syncing")]) }))
  }

  // MARK: Events

  public mutating func start() -> [Action] { map(link.start()) }

  public mutating func stop() -> [Action] {
    busy = false
    return map(link.stop())
  }

  /// The backoff ended.
  public mutating func retryDue() -> [Action] { map(link.retryDue()) }

  /// The connection is open: check the schema.
  public mutating func connected() -> [Action] { map(link.connected()) }

  /// The schema is at `version`.
  public mutating func migrated(version: Int, supported: Int) -> [Action] {
    map(link.migrated(version: version, supported: supported))
  }

  /// `LISTEN` succeeded: connected. Catch up first (`NOTIFY`s sent while away are gone).
  public mutating func listening(outboxHasWork: Bool) -> [Action] {
    guard link.phase == .preparing else { return [] }
    let actions = map(link.prepared())
    pullNeeded = true
    return actions + next(outboxHasWork: outboxHasWork)
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
    let actions = link.failed(message)
    if !actions.isEmpty { busy = false }
    return map(actions)
  }

  /// The link's actions as the pump's.
  private func map(_ actions: [LinkStateMachine.Action]) -> [Action] {
    actions.map {
      switch $0 {
      case .connect: .connect
      case .migrate: .run(.migrate)
      case .prepare: .run(.listen)
      case .closeConnection: .closeConnection
      case .retry(let seconds): .retry(afterSeconds: seconds)
      case .log(let line): .log(line)
      }
    }
  }

  // MARK: The next statement

  private mutating func next(outboxHasWork: Bool) -> [Action] {
    guard link.phase == .ready, !busy else { return [] }
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
