import TipsJSON
import TipsTransport

/// The listener's plain HTTP routes: `/healthz` (no token), `/metrics` (the token, as `Authorization: Bearer`), and
/// the web inspector's page and assets (no token: the page asks for it, from the URL fragment).
enum HTTPRoutes {
  static func respond(_ request: HTTPRequest, server: Server, uptime: Double, tls: Bool) -> HTTPResponse {
    switch request.path {
    case "/healthz":
      guard request.method == "GET" else { return .error(405, "use GET") }
      return Health.response(server: server, uptime: uptime)
    case "/metrics":
      guard request.method == "GET" else { return .error(405, "use GET") }
      guard request.authorized else {
        var refusal = HTTPResponse.error(
          401, "/metrics needs the token: Authorization: Bearer <token> (`tipsd token` prints it)")
        refusal.headers.append(("WWW-Authenticate", "Bearer realm=\"tipsd\""))
        return refusal
      }
      return HTTPResponse(
        status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(server.prometheusText().utf8),
        headers: [("Cache-Control", "no-store")])
    default:
      if let asset = InspectorAssets.response(path: request.path, host: request.host, tls: tls) {
        guard request.method == "GET" else { return .error(405, "use GET") }
        return asset
      }
      return .error(404, "not found: \(request.path) (try /, /healthz or /metrics)")
    }
  }
}

/// The web inspector's files (`inspector/`, embedded by `scripts/embed-inspector`) and the headers that keep the
/// page self-contained: a Content-Security-Policy allowing nothing but its own script, style and icon, and a
/// WebSocket to this listener.
enum InspectorAssets {
  static func response(path: String, host: String?, tls: Bool) -> HTTPResponse? {
    let (contentType, text): (String, String)
    switch path {
    case "/", "/index.html": (contentType, text) = ("text/html; charset=utf-8", index)
    case "/inspector.js": (contentType, text) = ("text/javascript; charset=utf-8", script)
    case "/inspector.css": (contentType, text) = ("text/css; charset=utf-8", style)
    case "/favicon.svg": (contentType, text) = ("image/svg+xml", icon)
    default: return nil
    }
    return HTTPResponse(
      status: 200, contentType: contentType, body: Array(text.utf8),
      headers: [
        ("Content-Security-Policy", contentSecurityPolicy(host: host, tls: tls)),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
      ])
  }

  /// `default-src 'none'`, then only what the page needs from its own origin, and the WebSocket to the host it was
  /// loaded from (the Host header, already checked to name this listener).
  static func contentSecurityPolicy(host: String?, tls: Bool) -> String {
    let socket = host.map { "\(tls ? "wss" : "ws")://\($0)" } ?? "'self'"
    return
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src \(socket); "
      + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
  }
}
