/// A JSON-RPC 2.0 error code.
///
/// The standard codes come from the JSON-RPC 2.0 specification (§5.1) and
/// LSP; tipsd's own codes live in the implementation-defined server-error
/// range -32000 ... -32099.
public struct ErrorCode: RawRepresentable, Hashable, Sendable {
  /// The numeric code sent on the wire.
  public var rawValue: Int

  /// Wraps a numeric code.
  public init(rawValue: Int) {
    self.rawValue = rawValue
  }

  // MARK: JSON-RPC 2.0

  /// -32700: the message is not valid JSON.
  public static let parseError = ErrorCode(rawValue: -32700)
  /// -32600: the JSON is not a valid request object (or is an empty batch).
  public static let invalidRequest = ErrorCode(rawValue: -32600)
  /// -32601: no method of that name exists.
  public static let methodNotFound = ErrorCode(rawValue: -32601)
  /// -32602: the method exists but its params are missing, mistyped or invalid.
  public static let invalidParams = ErrorCode(rawValue: -32602)
  /// -32603: the server failed unexpectedly while handling the request.
  public static let internalError = ErrorCode(rawValue: -32603)

  // MARK: LSP

  /// -32002: a request other than `initialize` arrived before `initialize`.
  public static let serverNotInitialized = ErrorCode(rawValue: -32002)
  /// -32800: the request was cancelled through `$/cancelRequest`.
  public static let requestCancelled = ErrorCode(rawValue: -32800)

  // MARK: tipsd

  /// -32001: the request names a tip that is not registered.
  public static let unknownTip = ErrorCode(rawValue: -32001)
  /// -32003: the request names an observation or action subscription that
  /// does not exist (or was already removed).
  public static let unknownSubscription = ErrorCode(rawValue: -32003)
  /// -32004: a `clock/*` request was made while the virtual clock is off.
  public static let virtualClockDisabled = ErrorCode(rawValue: -32004)
  /// -32005: reading or writing the persistent datastore failed.
  public static let datastoreFailure = ErrorCode(rawValue: -32005)
  /// -32006: the server is shutting down and accepts no further work.
  public static let shuttingDown = ErrorCode(rawValue: -32006)
  /// -32007: the request names a tip group that is not registered.
  public static let unknownGroup = ErrorCode(rawValue: -32007)
  /// -32008: the request names an action that the tip does not declare.
  public static let unknownAction = ErrorCode(rawValue: -32008)
  /// -32009: a tip's display rule is malformed or refers to unknown
  /// parameters or events.
  public static let invalidRule = ErrorCode(rawValue: -32009)
  /// -32010: the server already has its maximum number of connections; the
  /// new connection gets this error and is closed.
  public static let tooManyConnections = ErrorCode(rawValue: -32010)
  /// -32011: a testing method (testing overrides, `datastore/reset`, `clock/advance`, `clock/set`) on a daemon
  /// started without `--allow-testing`.
  public static let testingDisabled = ErrorCode(rawValue: -32011)
  /// -32012: a change that syncs across devices while the sync outbox is full (`--sync-outbox-limit` operations wait
  /// for PostgreSQL, even after merging): refused, not applied.
  public static let syncOutboxFull = ErrorCode(rawValue: -32012)
  /// -32013: hosted mode: no valid sign-in — the token is missing, malformed, badly signed, expired or not for this
  /// app (`data.reason` says which). Sent with id null before closing a session whose token expired.
  public static let unauthorized = ErrorCode(rawValue: -32013)
  /// -32014: hosted mode: signed in, but not allowed — an admin method without the admin token, another account's
  /// data, or a definition method (the catalog defines tips for every account).
  public static let forbidden = ErrorCode(rawValue: -32014)
  /// -32015: hosted mode: the account's quota is used up (`data.quota`: `rate` or `donations`); retry after
  /// `data.retryAfter` seconds (rate) — nothing changed.
  public static let quotaExceeded = ErrorCode(rawValue: -32015)
  /// -32016: hosted mode: PostgreSQL could not commit the change (unreachable, failing over, or the commit failed):
  /// not acknowledged — retry after `data.retryAfter` seconds. Reads keep working from memory.
  public static let unavailable = ErrorCode(rawValue: -32016)
}

extension ErrorCode: ExpressibleByIntegerLiteral {
  /// Creates a code from an integer literal.
  public init(integerLiteral value: Int) {
    self.init(rawValue: value)
  }
}

extension ErrorCode: CustomStringConvertible {
  /// The numeric code.
  public var description: String { String(rawValue) }
}
