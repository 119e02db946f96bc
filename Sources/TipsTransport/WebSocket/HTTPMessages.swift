// The plain HTTP requests the WebSocket listener answers itself (not upgrades), and its answers.

/// A plain HTTP request to the listener (not an upgrade).
public struct HTTPRequest: Sendable {
  public var method: String
  /// The path, without the query.
  public var path: String
  /// Whether it carried the token (`Authorization: Bearer`).
  public var authorized: Bool
  /// The `Host` header (already checked to name this listener).
  public var host: String?

  public init(method: String, path: String, authorized: Bool, host: String? = nil) {
    self.method = method
    self.path = path
    self.authorized = authorized
    self.host = host
  }
}

/// The answer to an ``HTTPRequest``.
public struct HTTPResponse: Sendable {
  public var status: Int
  public var contentType: String
  public var body: [UInt8]
  /// Extra headers (`Content-Security-Policy`, `Cache-Control`, …).
  public var headers: [(String, String)]

  public init(status: Int, contentType: String = "application/json", body: [UInt8], headers: [(String, String)] = []) {
    self.status = status
    self.contentType = contentType
    self.body = body
    self.headers = headers
  }

  /// A JSON error body `{"error": reason}`.
  public static func error(_ status: Int, _ reason: String) -> HTTPResponse {
    var escaped = ""
    for scalar in reason.unicodeScalars {
      switch scalar {
      case "\"": escaped += "\\\""
      case "\\": escaped += "\\\\"
      default: escaped.unicodeScalars.append(scalar.value < 0x20 ? " " : scalar)
      }
    }
    return HTTPResponse(status: status, body: Array("{\"error\":\"\(escaped)\"}\n".utf8))
  }
}

/// Why an upgrade is refused: an HTTP status and a reason for the client.
public struct UpgradeRefusal: Error, Sendable, Equatable {
  public var status: Int
  public var reason: String

  public init(status: Int, reason: String) {
    self.status = status
    self.reason = reason
  }
}
