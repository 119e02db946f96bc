/// An endpoint's URL, checked when it is created: `https://` anywhere, or `http://` only to the loopback interface
/// (127.0.0.0/8, `::1`, `localhost`) — a plain-text webhook never leaves the machine. No user info, no fragment.
public struct WebhookURL: Sendable, Equatable {
  public enum Scheme: String, Sendable { case http, https }

  public let scheme: Scheme
  /// The host as written (IPv6 without brackets).
  public let host: String
  public let port: Int
  /// The path and query, `/` when empty.
  public let target: String
  public let text: String

  /// The URL, or why it is refused.
  public static func parse(_ text: String) -> Result<WebhookURL, WebhookURLError> {
    guard text.utf8.count <= 2_048 else { return .failure(.init("the URL is longer than 2048 bytes")) }
    guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
      return .failure(.init("the URL holds spaces, control or non-ASCII characters"))
    }
    let scheme: Scheme
    var rest: Substring
    if text.lowercased().hasPrefix("https://") {
      scheme = .https
      rest = text.dropFirst(8)
    } else if text.lowercased().hasPrefix("http://") {
      scheme = .http
      rest = text.dropFirst(7)
    } else {
      return .failure(.init("only https:// URLs (or http:// to the loopback interface) are accepted"))
    }
    guard !rest.contains("#") else { return .failure(.init("the URL has a fragment")) }
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    var target = String(rest[authorityEnd...])
    if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
    guard !authority.contains("@") else { return .failure(.init("the URL has user information")) }
    var host: Substring
    var portText: Substring?
    if authority.hasPrefix("[") {
      guard let close = authority.firstIndex(of: "]") else {
        return .failure(.init("the URL's IPv6 host is not closed"))
      }
      host = authority[authority.index(after: authority.startIndex)..<close]
      let after = authority[authority.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":") else { return .failure(.init("the URL's host is malformed")) }
        portText = after.dropFirst()
      }
    } else if let colon = authority.lastIndex(of: ":") {
      host = authority[..<colon]
      portText = authority[authority.index(after: colon)...]
    } else {
      host = authority
    }
    guard !host.isEmpty else { return .failure(.init("the URL has no host")) }
    var port = scheme == .https ? 443 : 80
    if let portText {
      guard let value = Int(portText), (1...65_535).contains(value) else {
        return .failure(.init("the URL's port is not a number from 1 to 65535"))
      }
      port = value
    }
    let url = WebhookURL(scheme: scheme, host: host.lowercased(), port: port, target: target, text: text)
    guard scheme == .https || url.isLoopback else {
      return .failure(.init("http:// is accepted only to the loopback interface (127.0.0.1, ::1, localhost)"))
    }
    return .success(url)
  }

  /// Whether the host is the loopback interface.
  public var isLoopback: Bool {
    if host == "localhost" || host == "::1" { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
  }

  /// The `Host` header's value.
  public var hostHeader: String {
    let name = host.contains(":") ? "[\(host)]" : host
    return port == (scheme == .https ? 443 : 80) ? name : "\(name):\(port)"
  }
}

/// Why a webhook URL is refused.
public struct WebhookURLError: Error, Sendable, Equatable, CustomStringConvertible {
  public let message: String
  init(_ message: String) { self.message = message }
  public var description: String { message }
}
