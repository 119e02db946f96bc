import TipsTransport

/// The `upgrade` fuzz target's oracle: what the HTTP/WebSocket listener reads from a request's headers and query
/// before it lets an upgrade through (TipsTransport's `AccessPolicy`: the token as `Authorization: Bearer`, as the
/// `tipsd.token.` subprotocol or as hosted mode's `access_token` query parameter; `Host` and `Origin`; and
/// `ListenAddress`). Compiled into Fuzz/harness/UpgradeHarness.swift by Fuzz/build.sh and replayed over the committed
/// seeds and regressions by `FuzzRegressions`. (Parsing the HTTP request and decoding its query is libwebsockets'.)
///
/// The input is the request's parts, one a line: Authorization, Sec-WebSocket-Protocol, the `access_token` value,
/// Host, Origin, the listener (`--listen`), a line `tls` for a TLS listener; a missing line is an absent header.
enum UpgradeFuzzOracle {
  typealias Check = (_ holds: Bool, _ message: () -> String) -> Void

  /// The daemon's token the policy holds, and an origin allowed besides its own.
  static let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  static let allowedOrigin = "http://localhost:8081"
  static let tokenRefusals: Set<String> = [
    "a token is required: offer the subprotocols tipsd.v1 and tipsd.token.<token>, or send "
      + "Authorization: Bearer <token> (`tipsd token` prints it)",
    "the token is wrong (`tipsd token` prints the current one)",
    "offer the subprotocol tipsd.v1",
  ]

  static func check(_ input: [UInt8], _ check: Check) {
    let fields = input.split(separator: 0x0A, omittingEmptySubsequences: false).map {
      String(decoding: $0, as: UTF8.self)
    }
    func field(_ index: Int) -> String? { index < fields.count ? fields[index] : nil }
    let authorization = field(0)
    let protocols = field(1)
    let accessToken = field(2)
    let host = field(3)
    let origin = field(4)
    let policy = AccessPolicy(token: token, allowedOrigins: [allowedOrigin], tls: field(6) == "tls")
    let listener = field(5).flatMap { try? ListenAddress(parsing: $0) } ?? ListenAddress(host: "127.0.0.1", port: 8787)
    if let text = field(5) { listenAddress(text, check) }

    // The subprotocols: trimmed, non-empty names from the header.
    let offered = AccessPolicy.offeredProtocols(protocols)
    for name in offered {
      check(!name.isEmpty && !name.contains(","), { "an offered subprotocol \(name.debugDescription)" })
      check(
        name.first != " " && name.first != "\t" && name.last != " " && name.last != "\t",
        { "an offered subprotocol is not trimmed: \(name.debugDescription)" })
      check(protocols?.contains(name) == true, { "\(name.debugDescription) is not in the header" })
    }
    // The tokens presented come from the request.
    let presented = AccessPolicy.presentedTokens(authorization: authorization, protocols: protocols)
    for candidate in presented {
      check(
        authorization?.contains(candidate) == true || protocols?.contains(candidate) == true,
        { "presented token \(candidate.debugDescription) is not in the request" })
    }
    // The daemon's own check: allowed only with the right token and the subprotocol; a refusal is one of its fixed
    // reasons (never the request's text, so never a token).
    switch policy.checkToken(authorization: authorization, protocols: protocols) {
    case .allow:
      check(presented.contains(token), { "allowed without the token: \(presented)" })
      check(offered.isEmpty || offered.contains(AccessPolicy.subprotocol), { "allowed without tipsd.v1: \(offered)" })
    case .refuse(let status, let reason):
      check(status == 400 || status == 401, { "a token refusal with status \(status)" })
      check(tokenRefusals.contains(reason), { "a token refusal repeats the request: \(reason)" })
    }
    // Hosted mode: the first token presented, else access_token (read only then); refused without tipsd.v1.
    var reads = 0
    let credential = AccessPolicy.hostedCredential(authorization: authorization, protocols: protocols) {
      reads += 1
      return accessToken
    }
    switch credential {
    case .refuse(let status, let reason):
      check(status == 400 && tokenRefusals.contains(reason), { "a hosted refusal: \(status) \(reason)" })
      check(!offered.isEmpty && !offered.contains(AccessPolicy.subprotocol), { "refused though \(offered)" })
    case .token(let presentedToken):
      if let first = presented.first {
        check(presentedToken == first && reads == 0, { "not the first token presented, or the query was read" })
      } else {
        check(presentedToken == accessToken && !presentedToken.isEmpty, { "not the access_token" })
      }
    case .none:
      check(presented.isEmpty && (accessToken ?? "").isEmpty, { "a token presented was ignored" })
    }
    // Comparing tokens: equal exactly when their bytes are.
    for (a, b) in [(authorization ?? "", protocols ?? ""), (accessToken ?? "", token), (presented.first ?? "", token)] {
      check(
        AccessPolicy.constantTimeEqual(a, b) == (Array(a.utf8) == Array(b.utf8)),
        { "constantTimeEqual(\(a.debugDescription), \(b.debugDescription)) is wrong" })
    }
    hostAndOrigin(policy, host: host, origin: origin, listener: listener, check)
  }

  /// `Host` and `Origin` are compared without regard to ASCII case, and a trailing slash of an origin does not count.
  static func hostAndOrigin(
    _ policy: AccessPolicy, host: String?, origin: String?, listener: ListenAddress, _ check: Check
  ) {
    let hostVerdict = policy.checkHost(host, listener: listener)
    check(
      policy.checkHost(host.map(asciiUppercased), listener: listener) == hostVerdict,
      { "the Host check depends on case: \(host ?? "nil")" })
    if case .allow = hostVerdict, let host {
      let port = String(listener.port)
      let defaultPort = policy.tls ? "443" : "80"
      check(
        host.lowercased().hasSuffix(":\(port)") || port == defaultPort,
        { "Host \(host) allowed without the listener's port \(port)" })
    }
    let originVerdict = policy.checkOrigin(origin, host: host, listener: listener)
    // (An empty Origin counts as none; "/" is not empty.)
    let slashed = origin.flatMap { $0.isEmpty ? nil : $0 + "/" }
    for variant in [origin.map(asciiUppercased), slashed ?? origin] {
      check(
        (policy.checkOrigin(variant, host: host, listener: listener) == .allow) == (originVerdict == .allow),
        { "the Origin check of \(origin ?? "nil") and \(variant ?? "nil") differ" })
    }
  }

  /// `--listen` (the operator's, not a client's: read for the listener the checks use, and only checked for its range;
  /// a host in brackets that is no IPv6 address, `[[x]:1`, is taken as written and does not read back).
  static func listenAddress(_ text: String, _ check: Check) {
    guard let address = try? ListenAddress(parsing: text) else { return }
    check((0...65_535).contains(address.port) && !address.host.isEmpty, { "--listen \(text) read as \(address)" })
  }

  static func asciiUppercased(_ text: String) -> String {
    String(decoding: text.utf8.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
  }
}
