public import TipsLogging

/// One PostgreSQL connection's life, as a state machine (issue #44): connect, create or migrate the `tipsd` schema,
/// get ready (prepare statements, or `LISTEN`), ready; when any step fails or the connection is lost (an answer waited
/// too long counts), close it, back off (``Backoff``: 0.1 s doubling to `retryMax`) and connect again; a schema newer
/// than this build stops it for good. No libpq, loop or clock: a hosted node's links (`PGLink`) and a device's sync
/// pump (``SyncPumpStateMachine``) both run it and perform its actions.
public struct LinkStateMachine: Sendable {
  public enum Phase: Sendable, Equatable {
    /// Not connected: waiting for the first start or for the backoff before the next attempt.
    case disconnected
    /// Resolving host names and connecting.
    case connecting
    /// Creating or migrating the schema, reading its version.
    case migrating
    /// Preparing statements or asking to `LISTEN` (whichever the link's role needs).
    case preparing
    case ready
    /// The database's `tipsd` schema is newer than this build: nothing is served or synced.
    case incompatible
    case stopped
  }

  public enum Action: Sendable, Equatable {
    /// Resolve host names and open a new connection.
    case connect
    /// Create or migrate the schema and read its version (``migrated(version:supported:)`` when done).
    case migrate
    /// Prepare the statements or `LISTEN` (``prepared()`` when done).
    case prepare
    /// Close the connection: what was in flight on it fails.
    case closeConnection
    /// Connect again after this many seconds (``retryDue()``).
    case retry(afterSeconds: Double)
    case log(LogLine)
  }

  /// A line to log, as the machine's owner words it.
  public struct LogLine: Sendable, Equatable {
    public var level: LogLevel
    public var message: String
    public var metadata: [Pair]

    public struct Pair: Sendable, Equatable {
      public var key: String
      public var value: String
    }

    public init(_ level: LogLevel, _ message: String, _ metadata: [(String, String)]) {
      self.level = level
      self.message = message
      self.metadata = metadata.map { Pair(key: $0.0, value: $0.1) }
    }
  }

  /// How the owner words its log lines (a hosted node's links and a device's pump speak to different readers).
  public struct Voice: Sendable {
    /// The first failure since the link was last ready (the error, one line).
    public var unreachable: @Sendable (String) -> LogLine
    /// Later failures, until it is ready again (nil: not logged).
    public var stillUnreachable: @Sendable (String) -> LogLine?
    /// Ready; `afterFailure` when a failure was logged since it was last ready (nil: not logged).
    public var ready: @Sendable (_ afterFailure: Bool) -> LogLine?
    /// The schema is newer than this build (the reason).
    public var incompatible: @Sendable (String) -> LogLine

    public init(
      unreachable: @escaping @Sendable (String) -> LogLine,
      stillUnreachable: @escaping @Sendable (String) -> LogLine?,
      ready: @escaping @Sendable (_ afterFailure: Bool) -> LogLine?,
      incompatible: @escaping @Sendable (String) -> LogLine
    ) {
      self.unreachable = unreachable
      self.stillUnreachable = stillUnreachable
      self.ready = ready
      self.incompatible = incompatible
    }
  }

  public private(set) var phase = Phase.disconnected
  /// The last connection or statement error (one line), cleared once ready.
  public private(set) var lastError: String?
  private var backoff: Backoff
  /// Whether the unreachable line was logged since the link was last ready.
  private var warned = false
  private let voice: Voice

  public init(retryMax: Double, voice: Voice) {
    backoff = Backoff(first: min(0.1, retryMax), cap: retryMax)
    self.voice = voice
  }

  /// The wait after the next failure.
  public var retryDelay: Double { backoff.next }

  /// Connecting, migrating or preparing.
  public var isConnecting: Bool { phase == .connecting || phase == .migrating || phase == .preparing }

  // MARK: Events

  public mutating func start() -> [Action] {
    guard phase == .disconnected else { return [] }
    phase = .connecting
    return [.connect]
  }

  /// The backoff ended.
  public mutating func retryDue() -> [Action] { start() }

  public mutating func stop() -> [Action] {
    guard phase != .stopped else { return [] }
    phase = .stopped
    return [.closeConnection]
  }

  /// The connection is open: the schema next.
  public mutating func connected() -> [Action] {
    guard phase == .connecting else { return [] }
    phase = .migrating
    return [.migrate]
  }

  /// The schema is at `version`; this build understands up to `supported`.
  public mutating func migrated(version: Int, supported: Int) -> [Action] {
    guard phase == .migrating else { return [] }
    guard version <= supported else {
      phase = .incompatible
      let reason = "the database's tipsd schema is version \(version), newer than this tipsd understands (\(supported))"
      lastError = reason
      return [.closeConnection, .log(voice.incompatible(reason))]
    }
    phase = .preparing
    return [.prepare]
  }

  /// Statements prepared or `LISTEN` answered: ready; the backoff and the warning start over.
  public mutating func prepared() -> [Action] {
    guard phase == .preparing else { return [] }
    phase = .ready
    backoff.succeeded()
    lastError = nil
    let afterFailure = warned
    warned = false
    return voice.ready(afterFailure).map { [.log($0)] } ?? []
  }

  /// Connecting failed, a step failed, the connection was lost, or an answer waited past the link's timeout:
  /// closed, and connected again after the backoff. `message`: the error, scrubbed of the password.
  public mutating func failed(_ message: String) -> [Action] {
    guard isConnecting || phase == .ready else { return [] }
    phase = .disconnected
    // One line: libpq's messages continue on indented lines.
    let line = message.split(whereSeparator: \.isNewline).map { $0.drop { $0 == " " || $0 == "\t" } }
      .joined(separator: " ")
    lastError = line
    var actions: [Action] = [.closeConnection]
    if !warned {
      warned = true
      actions.append(.log(voice.unreachable(line)))
    } else if let still = voice.stillUnreachable(line) {
      actions.append(.log(still))
    }
    actions.append(.retry(afterSeconds: backoff.failed()))
    return actions
  }

  /// Once a second while ready: the oldest statement in flight has waited `age` seconds; past `timeout` the link is
  /// lost (a server that died without closing the connection, a cut network, a COMMIT held by an absent standby).
  public mutating func waited(_ age: Double?, timeout: Double) -> [Action] {
    guard phase == .ready, let age, age >= timeout else { return [] }
    return failed("PostgreSQL did not answer within \(Int(timeout)) s; connecting again")
  }
}
