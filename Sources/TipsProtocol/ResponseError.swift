public import TipsJSON

/// The `error` member of a JSON-RPC 2.0 error response.
public struct ResponseError: Error, Sendable, Hashable {
  /// The error code.
  public var code: ErrorCode
  /// A short, human-readable description.
  public var message: String
  /// Optional structured detail.
  public var data: JSONValue?

  /// Creates an error.
  public init(code: ErrorCode, message: String, data: JSONValue? = nil) {
    self.code = code
    self.message = message
    self.data = data
  }

  /// `{"code":…,"message":…}` plus `"data"` when present.
  public var json: JSONValue {
    var object: JSONObject = ["code": .int(Int64(code.rawValue)), "message": .string(message)]
    if let data { object["data"] = data }
    return .object(object)
  }

  /// Writes `json` without building it.
  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("code")
    writer.writeInt(code.rawValue)
    writer.key("message")
    writer.writeString(message)
    if let data { writer.member("data", data) }
    writer.endObject()
  }

  /// Decodes an error object (`code` integer, `message` string, optional
  /// `data`), or returns `nil` when it is malformed.
  public init?(json: JSONValue) {
    guard let code = json["code"]?.intValue, let intCode = Int(exactly: code),
      let message = json["message"]?.stringValue
    else { return nil }
    self.init(code: ErrorCode(rawValue: intCode), message: message, data: json["data"])
  }
}

extension ResponseError: CustomStringConvertible {
  /// `message (code)`.
  public var description: String { "\(message) (\(code.rawValue))" }
}

// MARK: - Factories

/// Every error the daemon sends is made here, with the `data` members `protocol/README.md` documents (`id`,
/// `actionId`, `path`, `subscription`, `offset`).
extension ResponseError {
  /// -32700 with the parser's explanation and the byte `offset` where it stopped.
  public static func parseError(_ detail: String, offset: Int) -> ResponseError {
    ResponseError(code: .parseError, message: "parse error: \(detail)", data: ["offset": .int(Int64(offset))])
  }

  /// -32600 with what is wrong with the request object.
  public static func invalidRequest(_ detail: String) -> ResponseError {
    ResponseError(code: .invalidRequest, message: "invalid request: \(detail)")
  }

  /// -32600 for `[]`.
  public static func emptyBatch() -> ResponseError { .invalidRequest("an empty batch") }

  /// -32600 for a stream that broke the framing (the connection is closed after it).
  public static func framingError(_ detail: String) -> ResponseError {
    ResponseError(code: .invalidRequest, message: detail)
  }

  /// -32600: `initialize` twice on one connection.
  public static func alreadyInitialized() -> ResponseError {
    ResponseError(code: .invalidRequest, message: "initialize: the connection is already initialized")
  }

  /// -32601: `unknown method "x"`.
  public static func methodNotFound(_ method: String) -> ResponseError {
    ResponseError(code: .methodNotFound, message: "unknown method \"\(method)\"")
  }

  /// -32602 with a complete message (see ``Params`` for generated ones).
  public static func invalidParams(_ message: String, data: JSONValue? = nil) -> ResponseError {
    ResponseError(code: .invalidParams, message: message, data: data)
  }

  /// -32602 for a definition (tip, rule, parameter, group) that does not decode; `data.path` locates it.
  public static func invalidDefinition(method: String, path: String, problem: String) -> ResponseError {
    ResponseError(
      code: .invalidParams, message: "\(method): params.\(path): \(problem)", data: ["path": .string("params.\(path)")])
  }

  /// -32602: a param the method does not take.
  public static func unknownParam(method: String, name: String, allowed: [String]) -> ResponseError {
    let expected = allowed.isEmpty ? "it takes no params" : "expected " + allowed.sorted().joined(separator: ", ")
    return ResponseError(code: .invalidParams, message: "\(method): unknown param \"\(name)\" (\(expected))")
  }

  /// -32602: `parameters/set` of a parameter that was never defined.
  public static func unknownParameter(method: String, id: String) -> ResponseError {
    ResponseError(
      code: .invalidParams,
      message: "\(method): unknown parameter \"\(id)\": declare it with parameters/define first",
      data: ["id": .string(id)])
  }

  /// -32002: a request other than `initialize` (or `rpc.discover`) before `initialize`.
  public static func serverNotInitialized(method: String) -> ResponseError {
    ResponseError(
      code: .serverNotInitialized, message: "server not initialized: send \"initialize\" before \"\(method)\"")
  }

  /// -32001: `unknown tip "x"`.
  public static func unknownTip(_ id: String) -> ResponseError {
    ResponseError(
      code: .unknownTip, message: "unknown tip \"\(id)\": register it with tips/register first",
      data: ["id": .string(id)])
  }

  /// -32003: an id this daemon never issued.
  public static func unknownSubscription(method: String, id: String) -> ResponseError {
    ResponseError(
      code: .unknownSubscription,
      message: "\(method): unknown subscription \"\(id)\": use the id returned by tips/observe or actions/subscribe",
      data: ["subscription": .string(id)])
  }

  /// -32004: `clock/advance` or `clock/set` without the virtual clock.
  public static func virtualClockDisabled(method: String) -> ResponseError {
    ResponseError(
      code: .virtualClockDisabled,
      message: "\(method): the virtual clock is disabled; start the daemon with `tipsd serve --clock virtual`")
  }

  /// -32011: a testing-only method on a daemon started without `--allow-testing`.
  public static func testingDisabled(method: String) -> ResponseError {
    ResponseError(
      code: .testingDisabled,
      message:
        "\(method): testing methods are off; start the daemon with `tipsd serve --allow-testing` (tests and "
        + "development only, never in a shipped app)")
  }

  /// -32012: the sync outbox is full (PostgreSQL unreachable for long): the change was refused, nothing changed.
  public static func syncOutboxFull(method: String, limit: Int) -> ResponseError {
    ResponseError(
      code: .syncOutboxFull,
      message:
        "\(method): refused: \(limit) changes are waiting for the sync server (--sync-outbox-limit); this change "
        + "would be kept on this device only. It is accepted again once PostgreSQL is reachable (see `tipsd sync status`)",
      data: ["limit": .int(Int64(limit))])
  }

  /// -32005: the turn's commit failed, so this change is not acknowledged.
  public static func datastoreFailure(path: String) -> ResponseError {
    ResponseError(
      code: .datastoreFailure,
      message: "datastore failure: the change was not committed to \(path); see the daemon's log")
  }

  /// -32006: after `shutdown`, only `exit` is accepted.
  public static func shuttingDown() -> ResponseError {
    ResponseError(code: .shuttingDown, message: "shutting down: only \"exit\" is accepted after \"shutdown\"")
  }

  /// -32007: `unknown group "x"`.
  public static func unknownGroup(_ id: String) -> ResponseError {
    ResponseError(
      code: .unknownGroup, message: "unknown group \"\(id)\": register it with groups/register first",
      data: ["id": .string(id)])
  }

  /// -32008: `unknown action "a" for tip "t"`, listing the tip's actions.
  public static func unknownAction(_ actionID: String, tip tipID: String, known: [String]) -> ResponseError {
    let list = known.map { "\"\($0)\"" }.joined(separator: ", ")
    return ResponseError(
      code: .unknownAction,
      message: "unknown action \"\(actionID)\" for tip \"\(tipID)\" (its actions: \(list.isEmpty ? "none" : list))",
      data: ["id": .string(tipID), "actionId": .string(actionID)])
  }

  /// -32010: the connection limit is reached; sent once before closing the new connection.
  public static func tooManyConnections(limit: Int) -> ResponseError {
    ResponseError(
      code: .tooManyConnections, message: "too many connections: the daemon serves at most \(limit) at once",
      data: ["scope": "daemon", "limit": .int(Int64(limit)), "retryAfter": .null])
  }

  /// -32010 for one peer (a uid on the Unix socket): `scope` `peer` (it holds `--max-connections-per-peer`
  /// connections; `retryAfter` null) or `rate` (it opened more than `--peer-connection-rate` a second; `retryAfter`
  /// seconds until the next is admitted). Sent once before closing the new connection.
  public static func tooManyConnections(scope: String, limit: Double, retryAfter: Double?, _ detail: String)
    -> ResponseError
  {
    let shownLimit: JSONValue = limit == limit.rounded() ? .int(Int64(limit)) : .double(limit)
    return ResponseError(
      code: .tooManyConnections, message: detail,
      data: [
        "scope": .string(scope), "limit": shownLimit,
        "retryAfter": retryAfter.map { .double(($0 * 1000).rounded(.up) / 1000) } ?? .null,
      ])
  }

  // MARK: Hosted mode

  /// -32013: no valid sign-in; `reason` is the verifier's code (`missing`, `expired`, `badSignature`, …), and
  /// `retryAfter` the seconds after which a retry may succeed (`throttled`, `tooManyAttempts`).
  public static func unauthorized(reason: String, _ detail: String, retryAfter: Double? = nil) -> ResponseError {
    var data: JSONObject = ["reason": .string(reason)]
    if let retryAfter { data["retryAfter"] = .double((retryAfter * 1000).rounded(.up) / 1000) }
    return ResponseError(code: .unauthorized, message: "unauthorized: \(detail)", data: .object(data))
  }

  /// -32014: signed in, but this is not allowed.
  public static func forbidden(method: String, _ detail: String) -> ResponseError {
    ResponseError(code: .forbidden, message: "\(method): forbidden: \(detail)")
  }

  /// -32015: the account's `quota` (`rate` or `donations`) is used up; nothing changed.
  public static func quotaExceeded(
    method: String, quota: String, limit: Int, retryAfter: Double?, _ detail: String
  ) -> ResponseError {
    var data: JSONObject = ["quota": .string(quota), "limit": .int(Int64(limit))]
    data["retryAfter"] = retryAfter.map { .double(($0 * 1000).rounded(.up) / 1000) } ?? .null
    return ResponseError(code: .quotaExceeded, message: "\(method): quota exceeded: \(detail)", data: .object(data))
  }

  /// -32016: PostgreSQL did not commit the change; retry after `retryAfter` seconds.
  public static func unavailable(method: String, retryAfter: Double, _ detail: String) -> ResponseError {
    ResponseError(
      code: .unavailable,
      message: "\(method): not acknowledged, retry: \(detail)",
      data: ["retryAfter": .double(retryAfter)])
  }
}
