/// Who may use the HTTP/WebSocket listener: the browser-safety checks (`Host` against DNS rebinding, `Origin`
/// against cross-site WebSocket hijacking) and the token. Pure, so every rule is tested without a socket.
public struct AccessPolicy: Sendable {
  /// The shared secret: 64 lowercase hex characters (256 bits).
  public let token: String
  /// Origins allowed besides the listener's own (`--allow-origin`), compared case-insensitively, without a
  /// trailing slash (`http://localhost:8081`).
  public let allowedOrigins: Set<String>
  /// Whether the listener speaks TLS (its own origin is then `https://…`).
  public let tls: Bool

  /// The subprotocol a client must offer; the server selects it.
  public static let subprotocol = "tipsd.v1"
  /// The prefix of the subprotocol that carries the token (`tipsd.token.<token>`), for browsers, which cannot set
  /// headers on a WebSocket.
  public static let tokenSubprotocolPrefix = "tipsd.token."

  public init(token: String, allowedOrigins: Set<String> = [], tls: Bool = false) {
    self.token = token
    self.allowedOrigins = Set(allowedOrigins.map(Self.normalize))
    self.tls = tls
  }

  /// The outcome of a check: allowed, or refused with an HTTP status and a reason for the client.
  public enum Verdict: Sendable, Equatable {
    case allow
    case refuse(status: Int, reason: String)
  }

  /// `Host` must name this listener: its own address and port, or `localhost` with its port. A wildcard listener
  /// (`0.0.0.0`, TLS only) accepts any host with its port. Refusing anything else defeats DNS rebinding, where a
  /// hostile name is made to resolve to 127.0.0.1.
  public func checkHost(_ host: String?, listener: ListenAddress) -> Verdict {
    guard let host = host?.lowercased(), !host.isEmpty else {
      return .refuse(status: 400, reason: "the request has no Host header")
    }
    let port = String(listener.port)
    let defaultPort = tls ? "443" : "80"
    func names(_ name: String) -> Bool {
      host == "\(name):\(port)" || (port == defaultPort && host == name)
    }
    if listener.isWildcard, host.hasSuffix(":\(port)") || port == defaultPort { return .allow }
    let own = listener.isIPv6 ? "[\(listener.host.lowercased())]" : listener.host.lowercased()
    if names(own) || names("localhost") { return .allow }
    if listener.isLoopback && !listener.isIPv6 && (names("127.0.0.1")) { return .allow }
    return .refuse(status: 403, reason: "Host \(host) is not this listener (use \(own):\(port) or localhost:\(port))")
  }

  /// `Origin`, when a browser sends it, must be the listener's own origin or allowed with `--allow-origin`: a page
  /// from elsewhere may not open a WebSocket to the daemon with the user's ambient access.
  public func checkOrigin(_ origin: String?, host: String?, listener: ListenAddress) -> Verdict {
    guard let origin, !origin.isEmpty else { return .allow }
    let normalized = Self.normalize(origin)
    if allowedOrigins.contains(normalized) { return .allow }
    let scheme = tls ? "https" : "http"
    var own: Set<String> = [
      "\(scheme)://localhost:\(listener.port)",
      "\(scheme)://\(listener.isIPv6 ? "[\(listener.host)]" : listener.host):\(listener.port)",
    ]
    if let host, !host.isEmpty { own.insert("\(scheme)://\(host.lowercased())") }
    if own.contains(normalized) { return .allow }
    return .refuse(status: 403, reason: "Origin \(origin) may not use this daemon (allow it with --allow-origin)")
  }

  /// The token, as `Authorization: Bearer <token>` or as the offered subprotocol `tipsd.token.<token>` (then
  /// `tipsd.v1` must be offered too). Compared in constant time.
  public func checkToken(authorization: String?, protocols: String?) -> Verdict {
    let presented = Self.presentedTokens(authorization: authorization, protocols: protocols)
    let offered = Self.offeredProtocols(protocols)
    guard !presented.isEmpty else {
      return .refuse(
        status: 401,
        reason: "a token is required: offer the subprotocols \(Self.subprotocol) and tipsd.token.<token>, or send "
          + "Authorization: Bearer <token> (`tipsd token` prints it)")
    }
    guard presented.contains(where: { Self.constantTimeEqual($0, token) }) else {
      return .refuse(status: 401, reason: "the token is wrong (`tipsd token` prints the current one)")
    }
    if !offered.isEmpty && !offered.contains(Self.subprotocol) {
      return .refuse(status: 400, reason: "offer the subprotocol \(Self.subprotocol)")
    }
    return .allow
  }

  /// The tokens a request presents: `Authorization: Bearer <token>`, then each offered `tipsd.token.<token>`
  /// subprotocol.
  public static func presentedTokens(authorization: String?, protocols: String?) -> [String] {
    var presented: [String] = []
    if let authorization {
      let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
      // An empty token counts as none (as an empty `access_token` does): found by fuzz target upgrade.
      if parts.count == 2, parts[0].lowercased() == "bearer", case let token = parts[1].trimmingSpaces(), !token.isEmpty
      {
        presented.append(token)
      }
    }
    for name in offeredProtocols(protocols) where name.hasPrefix(tokenSubprotocolPrefix) {
      let token = String(name.dropFirst(tokenSubprotocolPrefix.count))
      if !token.isEmpty { presented.append(token) }
    }
    return presented
  }

  /// What a hosted-mode upgrade presents (``WebListener``'s `authenticate`): no Host, Origin or token checks of its
  /// own, but subprotocols offered without `tipsd.v1` are refused (400), and the token is the first presented —
  /// `Authorization: Bearer`, then an offered `tipsd.token.<token>` — else the `access_token` query parameter (read
  /// only then; empty counts as absent). With none, the upgrade goes ahead and the client signs in inside `initialize`.
  public static func hostedCredential(
    authorization: String?, protocols: String?, accessToken: () -> String?
  ) -> HostedCredential {
    let offered = offeredProtocols(protocols)
    if !offered.isEmpty && !offered.contains(subprotocol) {
      return .refuse(status: 400, reason: "offer the subprotocol \(subprotocol)")
    }
    if let token = presentedTokens(authorization: authorization, protocols: protocols).first {
      return .token(token)
    }
    if let token = accessToken(), !token.isEmpty { return .token(token) }
    return .none
  }

  /// See ``hostedCredential(authorization:protocols:accessToken:)``.
  public enum HostedCredential: Sendable, Equatable {
    case none
    case token(String)
    case refuse(status: Int, reason: String)
  }

  /// The names in a `Sec-WebSocket-Protocol` header (comma-separated, possibly repeated).
  public static func offeredProtocols(_ header: String?) -> [String] {
    guard let header else { return [] }
    return header.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
  }

  /// Equal strings, compared in time that depends only on their lengths (no early exit on the first difference).
  ///
  /// Strings of different lengths are unequal at once: a token's length is no secret (tipsd's are 64 characters), and
  /// folding the lengths into the comparison is how a token followed by 256 NUL bytes once compared equal.
  public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    var a = a
    var b = b
    return a.withUTF8 { x in
      b.withUTF8 { y in
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
      }
    }
  }

  static func normalize(_ origin: String) -> String {
    var text = origin.lowercased()
    while text.hasSuffix("/") { text.removeLast() }
    return text
  }
}

extension Substring {
  fileprivate func trimmingSpaces() -> String {
    String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
  }
}
