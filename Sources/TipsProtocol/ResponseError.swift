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

extension ResponseError {
  /// -32700 with the parser's explanation.
  public static func parseError(_ detail: String, data: JSONValue? = nil) -> ResponseError {
    ResponseError(code: .parseError, message: "parse error: \(detail)", data: data)
  }

  /// -32600 with what is wrong with the request object.
  public static func invalidRequest(_ detail: String) -> ResponseError {
    ResponseError(code: .invalidRequest, message: "invalid request: \(detail)")
  }

  /// -32601: `unknown method "x"`.
  public static func methodNotFound(_ method: String) -> ResponseError {
    ResponseError(code: .methodNotFound, message: "unknown method \"\(method)\"")
  }

  /// -32602 with a complete message (see `Params` for generated ones).
  public static func invalidParams(_ message: String, data: JSONValue? = nil) -> ResponseError {
    ResponseError(code: .invalidParams, message: message, data: data)
  }

  /// -32603 with a complete message.
  public static func internalError(_ message: String, data: JSONValue? = nil) -> ResponseError {
    ResponseError(code: .internalError, message: message, data: data)
  }

  /// -32002: a request arrived before `initialize`.
  public static func serverNotInitialized() -> ResponseError {
    ResponseError(code: .serverNotInitialized, message: "server not initialized: send \"initialize\" first")
  }

  /// -32800: the request was cancelled.
  public static func requestCancelled() -> ResponseError {
    ResponseError(code: .requestCancelled, message: "request cancelled")
  }

  /// -32001: `unknown tip "x"`.
  public static func unknownTip(_ id: String) -> ResponseError {
    ResponseError(code: .unknownTip, message: "unknown tip \"\(id)\"", data: ["tipId": .string(id)])
  }

  /// -32003: `unknown subscription "x"`.
  public static func unknownSubscription(_ id: String) -> ResponseError {
    ResponseError(code: .unknownSubscription, message: "unknown subscription \"\(id)\"")
  }

  /// -32004: `clock/*` used without the virtual clock.
  public static func virtualClockDisabled() -> ResponseError {
    ResponseError(
      code: .virtualClockDisabled,
      message: "virtual clock disabled: start `tipsd serve --clock virtual` to use `clock/advance` and `clock/set`"
    )
  }

  /// -32005: `datastore failure: <detail>`.
  public static func datastoreFailure(_ detail: String) -> ResponseError {
    ResponseError(code: .datastoreFailure, message: "datastore failure: \(detail)")
  }

  /// -32006: the server is shutting down.
  public static func shuttingDown() -> ResponseError {
    ResponseError(code: .shuttingDown, message: "server is shutting down")
  }

  /// -32007: `unknown group "x"`.
  public static func unknownGroup(_ id: String) -> ResponseError {
    ResponseError(code: .unknownGroup, message: "unknown group \"\(id)\"", data: ["groupId": .string(id)])
  }

  /// -32008: `unknown action "a" for tip "t"`.
  public static func unknownAction(_ actionID: String, tip tipID: String) -> ResponseError {
    ResponseError(
      code: .unknownAction,
      message: "unknown action \"\(actionID)\" for tip \"\(tipID)\"",
      data: ["tipId": .string(tipID), "actionId": .string(actionID)]
    )
  }

  /// -32009: `invalid rule: <detail>`.
  public static func invalidRule(_ detail: String, data: JSONValue? = nil) -> ResponseError {
    ResponseError(code: .invalidRule, message: "invalid rule: \(detail)", data: data)
  }

  /// -32010: `too many connections (limit N)`.
  public static func tooManyConnections(limit: Int) -> ResponseError {
    ResponseError(code: .tooManyConnections, message: "too many connections (limit \(limit))")
  }
}
