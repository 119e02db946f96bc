public import TipsJSON

/// One JSON-RPC 2.0 message received from a client, classified per the
/// specification (§4 request object, §4.1 notification, §5 response).
public enum IncomingMessage: Sendable, Equatable {
  /// A call expecting a reply. `id` is `nil` when the client sent
  /// `"id": null`; the reply then carries `"id": null`.
  case request(id: RequestID?, method: String, params: JSONValue?)
  /// A call without an `id` member: it gets no reply, not even on error.
  case notification(method: String, params: JSONValue?)
  /// A reply from the client (no `method`, a `result` or an `error`);
  /// servers ignore it.
  case response(id: RequestID?, result: Result<JSONValue, ResponseError>)
  /// A malformed message, answered with `error` and the id that could be
  /// recovered (`nil` → `"id": null`).
  case invalid(id: RequestID?, error: ResponseError)

  /// The method a request or notification calls; nil for a response or an invalid message.
  public var method: String? {
    switch self {
    case .request(_, let method, _), .notification(let method, _): method
    case .response, .invalid: nil
    }
  }

  /// Classifies one decoded JSON value.
  ///
  /// Rules, checked in this order:
  /// - it must be an object, else -32600 with id `null`;
  /// - `id`, when present, must be a string, an integral number that fits
  ///   `Int64`, or `null`, else -32600 with id `null` (fractional ids are
  ///   rejected, although the specification only says they SHOULD NOT be
  ///   used);
  /// - `jsonrpc` must be exactly the string `"2.0"`;
  /// - an object without `method` but with `result` or `error` and an `id`
  ///   is a response (exactly one of the two; `error` well-formed);
  /// - `method` must be a string;
  /// - `params`, when present, must be an array or an object; `null` counts as absent (clients such as pygls
  ///   send `"params": null` for a call without params);
  /// - without an `id` member it is a notification, otherwise a request.
  ///
  /// Every error after the id check keeps the recovered id.
  public init(_ value: JSONValue) {
    guard case .object(let object) = value else {
      self = .invalid(id: nil, error: .invalidRequest("expected an object, got \(value.typeName)"))
      return
    }

    let id: RequestID?
    let hasID: Bool
    switch object["id"] {
    case nil:
      id = nil
      hasID = false
    case .null?:
      id = nil
      hasID = true
    case let member?:
      guard let decoded = RequestID(json: member) else {
        let got = member.isNumber ? "a non-integral number" : member.typeName
        self = .invalid(id: nil, error: .invalidRequest("id must be a string, an integer or null (got \(got))"))
        return
      }
      id = decoded
      hasID = true
    }

    guard case .string("2.0")? = object["jsonrpc"] else {
      self = .invalid(id: id, error: .invalidRequest("\"jsonrpc\" must be exactly \"2.0\""))
      return
    }

    guard let methodMember = object["method"] else {
      let result = object["result"]
      let error = object["error"]
      guard result != nil || error != nil else {
        self = .invalid(id: id, error: .invalidRequest("missing \"method\""))
        return
      }
      self = Self.response(id: id, hasID: hasID, result: result, error: error)
      return
    }
    guard case .string(let method) = methodMember else {
      self = .invalid(id: id, error: .invalidRequest("\"method\" must be a string (got \(methodMember.typeName))"))
      return
    }

    var params = object["params"]
    switch params {
    case nil, .array?, .object?:
      break
    case .null?:
      params = nil
    case let other?:
      self = .invalid(
        id: id, error: .invalidRequest("\"params\" must be an array or an object (got \(other.typeName))"))
      return
    }

    self = hasID ? .request(id: id, method: method, params: params) : .notification(method: method, params: params)
  }

  /// Validates the response shape of an object without `method`.
  private static func response(id: RequestID?, hasID: Bool, result: JSONValue?, error: JSONValue?) -> IncomingMessage {
    guard hasID else { return .invalid(id: nil, error: .invalidRequest("response without \"id\"")) }
    switch (result, error) {
    case (let result?, nil):
      return .response(id: id, result: .success(result))
    case (nil, let error?):
      guard let decoded = ResponseError(json: error) else {
        return .invalid(id: id, error: .invalidRequest("malformed \"error\" object in response"))
      }
      return .response(id: id, result: .failure(decoded))
    default:
      return .invalid(id: id, error: .invalidRequest("response has both \"result\" and \"error\""))
    }
  }
}
