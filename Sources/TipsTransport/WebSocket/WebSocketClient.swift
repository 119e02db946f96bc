import CLibWebSockets
import Foundation

/// A `ws://` or `wss://` URL a client connects to.
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
  public var secure: Bool
  public var host: String
  public var port: Int
  /// The request path, from `/` (the query kept).
  public var path: String

  public init(secure: Bool, host: String, port: Int, path: String) {
    self.secure = secure
    self.host = host
    self.port = port
    self.path = path
  }

  /// Parses `ws://host[:port][/path]` or `wss://…` (an IPv6 host in brackets); nil with the reason otherwise.
  public static func parse(_ text: String) -> Result<WebSocketURL, TransportError> {
    let secure: Bool
    var rest: Substring
    if text.hasPrefix("wss://") {
      secure = true
      rest = text.dropFirst(6)
    } else if text.hasPrefix("ws://") {
      secure = false
      rest = text.dropFirst(5)
    } else {
      return .failure(TransportError("\(text): not a ws:// or wss:// URL"))
    }
    let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    rest = rest.dropFirst(authority.count)
    var path = String(rest.prefix { $0 != "#" })
    if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
    guard !authority.contains("@") else {
      return .failure(TransportError("\(text): credentials belong in the token, not in the URL"))
    }
    var host = Substring(authority)
    var port = secure ? 443 : 80
    if host.hasPrefix("[") {
      guard let close = host.firstIndex(of: "]") else { return .failure(TransportError("\(text): unclosed [")) }
      let after = host[host.index(after: close)...]
      host = host[host.index(after: host.startIndex)..<close]
      if !after.isEmpty {
        guard after.hasPrefix(":"), let number = Int(after.dropFirst()), (1...65_535).contains(number) else {
          return .failure(TransportError("\(text): not a port"))
        }
        port = number
      }
    } else if let colon = host.lastIndex(of: ":") {
      guard let number = Int(host[host.index(after: colon)...]), (1...65_535).contains(number) else {
        return .failure(TransportError("\(text): not a port"))
      }
      port = number
      host = host[..<colon]
    }
    guard !host.isEmpty else { return .failure(TransportError("\(text): no host")) }
    return .success(WebSocketURL(secure: secure, host: String(host), port: port, path: path))
  }

  /// Whether the host is this machine (`ws://` is allowed to it only).
  public var isLoopback: Bool {
    host == "localhost" || host == "::1" || host.hasPrefix("127.")
  }

  public var description: String {
    let shown = host.contains(":") ? "[\(host)]" : host
    return "\(secure ? "wss" : "ws")://\(shown):\(port)\(path)"
  }
}

/// A WebSocket client on the daemon's libuv loop (libwebsockets' client API, `lws_client_connect_via_info`): one
/// connection at a time, text messages in and out. The owner calls ``connect(to:subprotocol:)``; the connection then
/// reports ``onOpen``, every message (``onMessage``), and once ``onClose`` (refused, lost or closed). Loop thread
/// only.
public final class WebSocketClient {
  /// The connection is open (the upgrade succeeded).
  public var onOpen: (() -> Void)?
  /// One whole text message.
  public var onMessage: (([UInt8]) -> Void)?
  /// The connection failed, was lost or closed; with why. Called once per ``connect(to:subprotocol:)``.
  public var onClose: ((String) -> Void)?

  private let loop: UVLoop
  private var context: OpaquePointer?
  private let protocols: UnsafeMutablePointer<lws_protocols>
  private var protocolName: UnsafeMutablePointer<CChar>?
  private var wsi: OpaquePointer?
  /// Messages waiting for the socket, each with `LWS_PRE` bytes of headroom.
  private var outbox: [[UInt8]] = []
  private var inbound: [UInt8] = []
  /// The largest message accepted (a larger one closes the connection).
  public var maxMessageSize = 64 * 1024 * 1024
  /// Seconds between pings while nothing is heard; a connection silent for twice as long is given up (a phone whose
  /// network went away without closing anything). 0: no pings.
  public var pingInterval: Double = 20
  private var pingTimer: (any LoopTimer)?
  private var pingDue = false
  /// When something was last heard on the connection (the loop's milliseconds).
  private var lastHeard: UInt64 = 0
  private var closing = false
  private var reported = true
  /// Counts connections, so callbacks of one that was replaced are ignored.
  private var generation = 0
  private var currentGeneration = 0

  public init(loop: UVLoop) {
    self.loop = loop
    WebListener.routeLibraryLogs()
    protocols = .allocate(capacity: 2)
    protocols.initialize(repeating: lws_protocols(), count: 2)
  }

  deinit {
    pingTimer?.close()
    if let context { lws_context_destroy(context) }
    protocols.deallocate()
    if let protocolName { free(protocolName) }
  }

  public var isOpen: Bool { wsi != nil && !reported && !closing }

  private func makeContext(subprotocol: String) -> Bool {
    if context != nil { return true }
    protocolName = strdup(subprotocol)
    protocols[0].name = UnsafePointer(protocolName)
    protocols[0].callback = webSocketClientCallback
    protocols[0].per_session_data_size = 0
    protocols[0].rx_buffer_size = 0
    var info = lws_context_creation_info()
    info.options = UInt64(LWS_SERVER_OPTION_LIBUV) | UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
    info.port = CONTEXT_PORT_NO_LISTEN
    info.protocols = UnsafePointer(protocols)
    info.user = Unmanaged.passUnretained(self).toOpaque()
    var foreign: [UnsafeMutableRawPointer?] = [UnsafeMutableRawPointer(loop.uvLoop)]
    context = foreign.withUnsafeMutableBufferPointer { loops -> OpaquePointer? in
      info.foreign_loops = loops.baseAddress
      return lws_create_context(&info)
    }
    return context != nil
  }

  /// Opens a connection (closing any open one first, whose ``onClose`` is not called).
  public func connect(to url: WebSocketURL, subprotocol: String) {
    loop.assertOnLoopThread()
    abandonCurrent()
    generation += 1
    currentGeneration = generation
    reported = false
    closing = false
    closeReason = nil
    inbound = []
    outbox = []
    pingDue = false
    lastHeard = loop.now
    armPings()
    guard makeContext(subprotocol: subprotocol) else {
      return report("libwebsockets could not create a client context on the libuv loop")
    }
    var info = lws_client_connect_info()
    info.context = context
    let host = strdup(url.host)!
    let path = strdup(url.path)!
    let hostHeader = strdup(url.port == (url.secure ? 443 : 80) ? url.host : "\(url.host):\(url.port)")!
    defer {
      free(host)
      free(path)
      free(hostHeader)
    }
    info.address = UnsafePointer(host)
    info.port = Int32(url.port)
    info.path = UnsafePointer(path)
    info.host = UnsafePointer(hostHeader)
    info.origin = nil
    info.protocol = UnsafePointer(protocolName)
    info.ietf_version_or_minus_one = -1
    info.ssl_connection = url.secure ? Int32(LCCSCF_USE_SSL.rawValue) : 0
    var made: OpaquePointer?
    withUnsafeMutablePointer(to: &made) { slot in
      info.pwsi = slot
      _ = lws_client_connect_via_info(&info)
    }
    guard let made else {
      // A connection error callback may already have reported it.
      return report("cannot connect to \(url)")
    }
    wsi = made
  }

  private func armPings() {
    guard pingInterval > 0, pingTimer == nil else { return }
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    let interval = UInt64(max(0.05, pingInterval) * 1000)
    timer.start(afterMilliseconds: interval, repeatEvery: interval) { [unowned self] in self.checkPeer() }
    pingTimer = timer
  }

  /// Pings a quiet connection; gives up one silent for two intervals.
  private func checkPeer() {
    guard let wsi, !reported, !closing else { return }
    let quiet = Double(loop.now &- lastHeard) / 1000
    if quiet >= 2 * pingInterval {
      close(reason: "the server stopped answering (nothing heard for \(Int(quiet)) s)")
    } else if quiet >= pingInterval * 0.9 {
      pingDue = true
      lws_callback_on_writable(wsi)
    }
  }

  /// Sends one text message (queued while the socket is busy).
  public func send(_ message: [UInt8]) {
    guard let wsi, !closing, !reported else { return }
    outbox.append([UInt8](repeating: 0, count: tipsd_lws_pre()) + message)
    lws_callback_on_writable(wsi)
  }

  /// Closes the connection; ``onClose`` follows (with `reason`).
  public func close(reason: String) {
    guard let wsi, !reported else { return }
    closing = true
    closeReason = reason
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC)
  }

  private var closeReason: String?

  /// Drops the current connection without reporting it.
  private func abandonCurrent() {
    guard let wsi else { return }
    reported = true
    self.wsi = nil
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC)
  }

  private func report(_ reason: String) {
    guard !reported else { return }
    reported = true
    wsi = nil
    outbox = []
    let generation = currentGeneration
    // Reported from a timer, never inside lws's callback (the owner may connect again at once).
    let timer = UVTimer(loop: loop)
    timer.start(afterMilliseconds: 0) { [weak self, timer] in
      timer.close()
      guard let self, self.currentGeneration == generation else { return }
      self.onClose?(reason)
    }
  }

  // MARK: Callbacks

  fileprivate func handle(
    _ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ length: Int
  ) -> Int32 {
    let current = wsi == self.wsi && !reported
    switch reason {
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
      guard current else { return 0 }
      let detail = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "no detail"
      report("connection failed: \(detail)")
      return 0
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
      guard current else { return -1 }
      let generation = currentGeneration
      let timer = UVTimer(loop: loop)
      timer.start(afterMilliseconds: 0) { [weak self, timer] in
        timer.close()
        guard let self, self.currentGeneration == generation, !self.reported else { return }
        self.onOpen?()
      }
      return 0
    case LWS_CALLBACK_CLIENT_RECEIVE_PONG:
      if current { lastHeard = loop.now }
      return 0
    case LWS_CALLBACK_CLIENT_RECEIVE:
      guard current else { return -1 }
      lastHeard = loop.now
      if let input, length > 0 {
        inbound.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
      }
      guard inbound.count <= maxMessageSize else {
        report("a message from the server is larger than \(maxMessageSize) bytes")
        return -1
      }
      if lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0 {
        let message = inbound
        inbound = []
        onMessage?(message)
      }
      return 0
    case LWS_CALLBACK_CLIENT_WRITEABLE:
      guard current, !closing else { return -1 }
      if pingDue {
        pingDue = false
        var frame = [UInt8](repeating: 0, count: tipsd_lws_pre())
        let sent = frame.withUnsafeMutableBufferPointer {
          lws_write(wsi, $0.baseAddress! + tipsd_lws_pre(), 0, LWS_WRITE_PING)
        }
        guard sent >= 0 else {
          report("the connection broke while writing")
          return -1
        }
        if !outbox.isEmpty { lws_callback_on_writable(wsi) }
        return 0
      }
      guard !outbox.isEmpty else { return 0 }
      var next = outbox.removeFirst()
      let pre = tipsd_lws_pre()
      let length = next.count - pre
      let sent = next.withUnsafeMutableBufferPointer { lws_write(wsi, $0.baseAddress! + pre, length, LWS_WRITE_TEXT) }
      guard sent >= 0 else {
        report("the connection broke while writing")
        return -1
      }
      if !outbox.isEmpty { lws_callback_on_writable(wsi) }
      return 0
    case LWS_CALLBACK_CLIENT_CLOSED, LWS_CALLBACK_WSI_DESTROY:
      if current { report(closeReason ?? "the server closed the connection") }
      if wsi == self.wsi { self.wsi = nil }
      return 0
    default:
      return 0
    }
  }
}

private func webSocketClientCallback(
  _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
  _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
  guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
    return lws_callback_http_dummy(wsi, reason, user, input, length)
  }
  let client = Unmanaged<WebSocketClient>.fromOpaque(owner).takeUnretainedValue()
  return client.handle(wsi, reason, input, length)
}
