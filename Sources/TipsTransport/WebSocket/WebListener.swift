// WebListener: HTTP/1.1 and WebSocket (RFC 6455) on tipsd's own libuv loop, through libwebsockets.
//
// libwebsockets does the protocol work — HTTP parsing, the upgrade handshake, framing, masking, fragmentation,
// ping/pong, close codes, UTF-8 validation, TLS — on the daemon's `uv_loop_t` as a "foreign loop", so every callback
// below runs on the loop thread, between our own handles' callbacks. What this file adds: the access checks before
// any upgrade (`AccessPolicy`), a `WebSocketStream` (a `ByteStream` carrying one JSON-RPC message per text frame)
// for each connection, plain HTTP answers (`onRequest`), and pings to find peers that vanished without a FIN.
//
// Ownership: the lws context is created here and destroyed by `close()`; lws then closes its own uv handles as the
// loop keeps running (`UVLoop.close()` runs it to the end and touches only our handles). The context's user
// pointer is this listener, unretained: the listener outlives the context. Each WebSocket connection's
// per-session data holds a +1 reference to its stream, released when lws reports the connection closed.
import CLibUV
import CLibWebSockets
import Glibc

/// Listens for HTTP and WebSocket clients on one or more addresses, on a `UVLoop`. Loop thread only.
public final class WebListener {
  public struct Configuration: Sendable {
    public var addresses: [ListenAddress]
    public var policy: AccessPolicy
    /// PEM certificate and key paths: serve wss/https.
    public var tls: (certificate: String, key: String)?
    /// The largest WebSocket message accepted (larger: closed with 1009).
    public var maxMessageSize: Int
    /// Seconds between pings to a quiet peer; a peer silent for two intervals is closed.
    public var pingInterval: Double
    /// The largest request header block (larger: refused).
    public var maxHeaderBytes: Int
    /// Seconds a new connection has to send its HTTP request or finish its WebSocket upgrade (libwebsockets'
    /// `timeout_secs` and `timeout_secs_ah_idle`); a peer that connects and stays silent is closed after it.
    public var handshakeTimeout: Double

    public init(
      addresses: [ListenAddress], policy: AccessPolicy, tls: (certificate: String, key: String)? = nil,
      maxMessageSize: Int = 1 << 20, pingInterval: Double = 15, maxHeaderBytes: Int = 8 * 1024,
      handshakeTimeout: Double = ConnectionLimits.defaultHandshakeTimeout
    ) {
      self.addresses = addresses
      self.policy = policy
      self.tls = tls
      self.maxMessageSize = maxMessageSize
      self.pingInterval = pingInterval
      self.maxHeaderBytes = maxHeaderBytes
      self.handshakeTimeout = handshakeTimeout
    }
  }

  let loop: UVLoop
  let configuration: Configuration
  private var context: OpaquePointer?
  private let protocols: UnsafeMutablePointer<lws_protocols>
  private var cStrings: [UnsafeMutablePointer<CChar>] = []
  /// The address each vhost listens on (the port the kernel chose, for port 0).
  private var vhosts: [UInt: ListenAddress] = [:]
  /// Open WebSocket connections, by their `lws` pointer.
  private var streams: [UInt: WebSocketStream] = [:]
  private var pingTimer: UVTimer?
  private let startedAt: UInt64
  /// How deep in lws callbacks the loop is (a connection may be killed synchronously only at depth 0).
  private var callbackDepth = 0
  /// Connections to kill once the current lws callback returns.
  private var doomed: [WebSocketStream] = []
  private var killTimer: UVTimer?

  /// Hosted mode: signs an upgrade in with the token it presents (a JWT or the admin token), returning who it is
  /// (handed to the stream as ``WebSocketStream/identity``) or why it is refused (401). An upgrade that presents no
  /// token is let through: the client signs in inside `initialize`. When set, the Host and Origin checks are not
  /// made: a hosted node is a public service behind its own name, and its sessions are authorized by the token they
  /// present, never by where a page comes from (no cookie or ambient access a foreign page could borrow).
  /// Called with the token and the upgrade's path (hosted mode's apps: `/apps/<id>`).
  public var authenticate: ((_ token: String, _ path: String?) -> Result<any Sendable, UpgradeRefusal>)?
  /// Who each upgrade signed in as, from ``authenticate``, until its connection is established.
  private var identities: [UInt: any Sendable] = [:]
  /// Each upgrade's path (``WebSocketStream/path``), until its connection is established.
  private var paths: [UInt: String] = [:]

  /// Per-peer limits by IP address, checked as each TCP connection is accepted (before libwebsockets does any work
  /// for it): a refused peer gets `429 Too Many Requests` and is closed. Shared with the server (set before the loop
  /// runs).
  public var limiter: ConnectionLimiter?
  /// A connection refused by ``limiter``: `(refusal, peer)`, for the daemon's counts and its sampled log.
  public var onRefusal: ((ConnectionRefusal, String) -> Void)?
  /// Peers admitted by the filter, by descriptor, until libwebsockets has made their connection.
  private var admittedByDescriptor: [Int32: String] = [:]
  /// The peer each connection counts against, by its `lws` pointer, until it is destroyed.
  private var peers: [UInt: String] = [:]

  /// A new WebSocket connection (authorized and upgraded). Call `startReading()` on it.
  public var onConnection: ((WebSocketStream) -> Void)?
  /// Answers a plain HTTP request (after the Host and Origin checks).
  public var onRequest: ((HTTPRequest) -> HTTPResponse)?
  /// Logs a refused request or a protocol problem (never with the token): `(isWarning, message, metadata)`.
  public var onLog: ((Bool, String, [(String, String)]) -> Void)?

  /// The addresses listened on, with the ports actually bound.
  public var boundAddresses: [ListenAddress] { vhosts.values.sorted { $0.description < $1.description } }
  /// Open WebSocket connections.
  public var connectionCount: Int { streams.count }

  /// Creates the lws context on `loop` and starts listening on every address.
  public init(loop: UVLoop, configuration: Configuration) throws(TransportError) {
    loop.assertUsable()
    self.loop = loop
    self.configuration = configuration
    startedAt = loop.now
    WebListener.routeLibraryLogs()
    protocols = .allocate(capacity: 3)
    protocols.initialize(repeating: lws_protocols(), count: 3)
    for (index, name) in ["http", AccessPolicy.subprotocol].enumerated() {
      let cName = strdup(name)!
      cStrings.append(cName)
      protocols[index].name = UnsafePointer(cName)
      protocols[index].callback = webListenerCallback
      protocols[index].per_session_data_size = MemoryLayout<UnsafeRawPointer>.size
      // Each connection's frame buffer stays 4 KiB (frames larger spill to the callback in pieces, which the stream
      // reassembles); the loop's one read buffer is 64 KiB (`pt_serv_buf_size` below).
      protocols[index].rx_buffer_size = 4096
    }

    var info = lws_context_creation_info()
    info.options =
      UInt64(LWS_SERVER_OPTION_LIBUV) | UInt64(LWS_SERVER_OPTION_EXPLICIT_VHOSTS)
      | UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8)
    if configuration.tls != nil { info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) }
    info.max_http_header_data = UInt16(clamping: configuration.maxHeaderBytes)
    // One read takes up to 64 KiB of a pipelining client's frames (the default 4 KiB took a read per ~50 donations).
    info.pt_serv_buf_size = 65_536
    info.user = Unmanaged.passUnretained(self).toOpaque()
    var foreign: [UnsafeMutableRawPointer?] = [UnsafeMutableRawPointer(loop.uvLoop)]
    let created = foreign.withUnsafeMutableBufferPointer { loops -> OpaquePointer? in
      info.foreign_loops = loops.baseAddress
      return lws_create_context(&info)
    }
    guard let created else {
      protocols.deallocate()
      for name in cStrings { free(name) }
      throw TransportError(
        "cannot start the WebSocket listener: libwebsockets could not create its context on the libuv loop "
          + "(is libwebsockets-evlib-uv installed?)")
    }
    context = created
    for address in configuration.addresses {
      do {
        try addVhost(address)
      } catch {
        close()
        throw error
      }
    }
    let timer = UVTimer(loop: loop)
    timer.keepsLoopAlive = false
    let interval = UInt64(max(0.05, configuration.pingInterval) * 1000)
    timer.start(afterMilliseconds: interval, repeatEvery: interval) { [unowned self] in self.checkPeers() }
    pingTimer = timer
  }

  private func addVhost(_ address: ListenAddress) throws(TransportError) {
    var info = lws_context_creation_info()
    let iface = strdup(address.host)!
    let name = strdup(address.description)!
    cStrings += [iface, name]
    info.port = Int32(address.port)
    info.iface = UnsafePointer(iface)
    info.vhost_name = UnsafePointer(name)
    info.protocols = UnsafePointer(protocols)
    info.options = UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8)
    let timeout = UInt32(max(1, configuration.handshakeTimeout.rounded(.up)))
    info.timeout_secs = timeout
    info.timeout_secs_ah_idle = timeout
    if address.isIPv6 {
      info.options |= UInt64(LWS_SERVER_OPTION_IPV6_V6ONLY_MODIFY) | UInt64(LWS_SERVER_OPTION_IPV6_V6ONLY_VALUE)
    } else {
      // libwebsockets 4.1 built with IPv6 makes an IPv6 socket and, given an IPv4 address, binds it to every
      // interface (its issue 2290): `--listen 127.0.0.1:8787` would be reachable from the network. An IPv4 socket
      // binds the address given.
      info.options |= UInt64(LWS_SERVER_OPTION_DISABLE_IPV6)
    }
    var certificate: UnsafeMutablePointer<CChar>?
    var key: UnsafeMutablePointer<CChar>?
    if let tls = configuration.tls {
      // lws decides per vhost whether it speaks TLS: the option must be on the vhost's info too.
      info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
      certificate = strdup(tls.certificate)
      key = strdup(tls.key)
      cStrings += [certificate!, key!]
      info.ssl_cert_filepath = UnsafePointer(certificate)
      info.ssl_private_key_filepath = UnsafePointer(key)
    }
    guard let vhost = lws_create_vhost(context, &info) else {
      throw TransportError(
        "cannot listen on \(address): the address is in use, not on this machine, or the TLS files are unreadable")
    }
    let port = Int(lws_get_vhost_listen_port(vhost))
    vhosts[UInt(bitPattern: vhost)] = address.with(port: port)
  }

  /// Stops listening and closes every connection (with 1001, after what they are owed when `flushing`); lws
  /// finishes closing its handles as the loop keeps running. Idempotent.
  public func close() {
    loop.assertOnLoopThread()
    pingTimer?.close()
    pingTimer = nil
    killTimer?.close()
    killTimer = nil
    guard let context else { return }
    self.context = nil
    for stream in streams.values { stream.loopClosing() }
    lws_context_destroy(context)
  }

  deinit {
    protocols.deallocate()
    for name in cStrings { free(name) }
  }

  // MARK: Peers

  /// Pings a peer quiet for an interval, and closes one that has not answered its ping an interval later (a phone
  /// that went to sleep, a SIGSTOP'd client: a half-open TCP connection sends no FIN) — silent for about two
  /// intervals. The deadline runs from the ping, not from the last frame heard: a healthy quiet peer is pinged every
  /// other check and answers at once, so "silent for two intervals" would be decided by the check timer's jitter.
  private func checkPeers() {
    let interval = UInt64(max(0.05, configuration.pingInterval) * 1000)
    let now = loop.now
    // Abandoning closes synchronously and removes the stream: iterate over a copy.
    for stream in Array(streams.values) {
      if let pinged = stream.pingedAt {
        if now &- pinged >= interval {
          log(
            warning: false, "closing a WebSocket peer that stopped answering pings",
            [("connection", String(stream.id))])
          stream.abandon()
        }
      } else if now &- stream.lastHeard >= interval {
        stream.sendPing()
      }
    }
  }

  // MARK: Callback

  /// Streams with frames to hand to lws at the end of this loop turn.
  private var toFlush: [WebSocketStream] = []

  /// Hands `stream`'s frames to lws at the end of the loop turn (after the server's own end of turn), in one write.
  func flushAtEndOfTurn(_ stream: WebSocketStream) {
    toFlush.append(stream)
    guard toFlush.count == 1 else { return }
    loop.atEndOfTurn { [unowned self] in
      let streams = self.toFlush
      self.toFlush.removeAll(keepingCapacity: true)
      for stream in streams { stream.flushOutbox() }
    }
  }

  /// Closes a connection now, or, from inside an lws callback, on the loop's next turn.
  func kill(_ stream: WebSocketStream) {
    guard callbackDepth > 0 else {
      stream.killNow()
      return
    }
    doomed.append(stream)
    let timer = killTimer ?? UVTimer(loop: loop)
    killTimer = timer
    timer.start(afterMilliseconds: 0, repeatEvery: 0) { [unowned self] in
      let streams = self.doomed
      self.doomed.removeAll()
      for stream in streams where self.streams.values.contains(where: { $0 === stream }) { stream.killNow() }
    }
  }

  fileprivate func handle(
    _ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
  ) -> Int32 {
    callbackDepth += 1
    defer { callbackDepth -= 1 }
    switch reason {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
      return filterConnection(user)
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
      if !admittedByDescriptor.isEmpty, let peer = admittedByDescriptor.removeValue(forKey: lws_get_socket_fd(wsi)) {
        peers[UInt(bitPattern: wsi)] = peer
      }
      return lws_callback_http_dummy(wsi, reason, user, input, length)
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
      return confirmUpgrade(wsi)
    case LWS_CALLBACK_HTTP:
      return answerHTTP(wsi, path: input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/")
    case LWS_CALLBACK_ESTABLISHED:
      let stream = WebSocketStream(wsi: wsi, listener: self)
      stream.identity = identities.removeValue(forKey: UInt(bitPattern: wsi))
      stream.path = paths.removeValue(forKey: UInt(bitPattern: wsi))
      stream.peer = peers[UInt(bitPattern: wsi)]
      user?.storeBytes(of: Unmanaged.passRetained(stream).toOpaque(), as: UnsafeMutableRawPointer.self)
      streams[UInt(bitPattern: wsi)] = stream
      if let onConnection { onConnection(stream) } else { stream.close(after: false, reason: "no handler") }
      return 0
    case LWS_CALLBACK_RECEIVE:
      guard let stream = stream(user) else { return -1 }
      let bytes = UnsafeRawBufferPointer(start: input, count: length)
      return stream.received(
        bytes, final: lws_is_final_fragment(wsi) != 0, remaining: Int(lws_remaining_packet_payload(wsi)),
        binary: lws_frame_is_binary(wsi) != 0)
    case LWS_CALLBACK_RECEIVE_PONG:
      stream(user)?.heard()
      return 0
    case LWS_CALLBACK_SERVER_WRITEABLE:
      return stream(user)?.writable() ?? 0
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
      stream(user)?.peerClosing()
      return 0
    case LWS_CALLBACK_CLOSED:
      // lws is closing (a close frame may still be on its way out, and its ack awaited): stop using it.
      stream(user)?.lwsClosing()
      return 0
    case LWS_CALLBACK_WSI_DESTROY:
      if !peers.isEmpty, let peer = peers.removeValue(forKey: UInt(bitPattern: wsi)) { limiter?.release(peer) }
      // The connection is gone for good (user data still intact): only now is it closed for the server.
      guard let user, let raw = user.load(as: UnsafeMutableRawPointer?.self) else {
        // An upgrade signed in but never established.
        identities[UInt(bitPattern: wsi)] = nil
        paths[UInt(bitPattern: wsi)] = nil
        return lws_callback_http_dummy(wsi, reason, user, input, length)
      }
      user.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
      let stream = Unmanaged<WebSocketStream>.fromOpaque(raw).takeRetainedValue()
      streams[UInt(bitPattern: wsi)] = nil
      stream.didClose()
      return 0
    default:
      return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
  }

  /// A TCP connection was just accepted: admit its address (counted until the connection is destroyed) or refuse it
  /// with `429 Too Many Requests` — written straight to the socket, before libwebsockets makes a connection of it —
  /// and close it (returning non-zero also ends libwebsockets' accept loop for this turn).
  private func filterConnection(_ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let limiter, let args = user?.assumingMemoryBound(to: lws_filter_network_conn_args.self) else { return 0 }
    let fd = args.pointee.accept_fd
    let peer = "ip:" + Self.address(of: &args.pointee.cli_addr)
    guard let refusal = limiter.admit(peer, now: Double(loop.now) / 1000) else {
      if let stale = admittedByDescriptor.updateValue(peer, forKey: fd) { limiter.release(stale) }
      return 0
    }
    onRefusal?(refusal, peer)
    var headers = [("Connection", "close")]
    if case .rate(_, let retryAfter) = refusal {
      headers.append(("Retry-After", String(max(1, Int(retryAfter.rounded(.up))))))
    }
    var response = HTTPResponse.error(429, refusal.description)
    response.headers = headers
    // What the client already sent is read first, so closing does not reset the connection before it reads the 429.
    var scratch = [UInt8](repeating: 0, count: 4096)
    for _ in 0..<4 where recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT)) == scratch.count {}
    let bytes = Self.rawResponse(response)
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
    shutdown(fd, Int32(SHUT_WR))
    return 1
  }

  /// A peer's IP address as text (`127.0.0.1`, `::1`).
  static func address(of storage: UnsafeMutablePointer<sockaddr_storage>) -> String {
    var text = [CChar](repeating: 0, count: 64)
    let raw = UnsafeMutableRawPointer(storage)
    let converted: UnsafePointer<CChar>?
    switch Int32(storage.pointee.ss_family) {
    case AF_INET:
      converted = inet_ntop(
        AF_INET, raw + MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!, &text, socklen_t(text.count))
    case AF_INET6:
      converted = inet_ntop(
        AF_INET6, raw + MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!, &text, socklen_t(text.count))
    default:
      converted = nil
    }
    return converted == nil
      ? "unknown" : String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  private func stream(_ user: UnsafeMutableRawPointer?) -> WebSocketStream? {
    guard let user, let raw = user.load(as: UnsafeMutableRawPointer?.self) else { return nil }
    return Unmanaged<WebSocketStream>.fromOpaque(raw).takeUnretainedValue()
  }

  func listenAddress(of wsi: OpaquePointer) -> ListenAddress? {
    guard let vhost = lws_get_vhost(wsi) else { return nil }
    return vhosts[UInt(bitPattern: vhost)]
  }

  /// The Host, Origin and token checks, before the WebSocket handshake completes.
  private func confirmUpgrade(_ wsi: OpaquePointer) -> Int32 {
    guard let listener = listenAddress(of: wsi) else { return -1 }
    let path = header(wsi, WSI_TOKEN_GET_URI)
    if let path { paths[UInt(bitPattern: wsi)] = path }
    if let authenticate {
      var refusal: UpgradeRefusal?
      switch AccessPolicy.hostedCredential(
        authorization: header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION), protocols: header(wsi, WSI_TOKEN_PROTOCOL),
        accessToken: { queryToken(wsi) })
      {
      case .none: break
      case .refuse(let status, let reason): refusal = UpgradeRefusal(status: status, reason: reason)
      case .token(let token):
        let peer = peers[UInt(bitPattern: wsi)]
        if let peer, let limiter, let wait = limiter.retryAfter(peer, now: Double(loop.now) / 1000) {
          // Over its rate (failed sign-ins count): refused without verifying the token.
          refusal = UpgradeRefusal(
            status: 429, reason: ConnectionRefusal.rate(limit: limiter.limits.ratePerPeer, retryAfter: wait).description
          )
        } else {
          switch authenticate(token, path) {
          case .success(let identity): identities[UInt(bitPattern: wsi)] = identity
          case .failure(let refused):
            refusal = refused
            // A failed sign-in costs the peer a new connection's worth of its rate: a flood of invalid tokens is
            // refused with 429 like a flood of connections, before any more are verified.
            if let peer { limiter?.charge(peer, now: Double(loop.now) / 1000) }
          }
        }
      }
      if let refusal {
        log(
          warning: false, "refused a WebSocket upgrade",
          [("status", String(refusal.status)), ("reason", refusal.reason)])
        writeRaw(wsi, Self.rawResponse(.error(refusal.status, refusal.reason)))
        paths[UInt(bitPattern: wsi)] = nil
        return 1
      }
      return 0
    }
    let host = header(wsi, WSI_TOKEN_HOST)
    let policy = configuration.policy
    let verdicts = [
      policy.checkHost(host, listener: listener),
      policy.checkOrigin(header(wsi, WSI_TOKEN_ORIGIN), host: host, listener: listener),
      policy.checkToken(
        authorization: header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION), protocols: header(wsi, WSI_TOKEN_PROTOCOL)),
    ]
    for case .refuse(let status, let reason) in verdicts {
      log(warning: true, "refused a WebSocket upgrade", [("status", String(status)), ("reason", reason)])
      // libwebsockets would write an HTTP/1.0 status line here (the version is only known after this callback);
      // strict clients refuse anything but HTTP/1.1, so the whole response is written by hand.
      writeRaw(wsi, Self.rawResponse(.error(status, reason)))
      paths[UInt(bitPattern: wsi)] = nil
      return 1
    }
    return 0
  }

  /// A request header's value, or nil when absent.
  /// The `access_token` query parameter (RFC 6750 §2.3), how a browser presents a JWT: browsers cannot set
  /// `Authorization` on a WebSocket, and libwebsockets 4.1 refuses a `Sec-WebSocket-Protocol` header over 127 bytes,
  /// too short for most JWTs (the `tipsd.token.` subprotocol suits the daemon's own 64-character token).
  func queryToken(_ wsi: OpaquePointer) -> String? {
    var buffer = [CChar](repeating: 0, count: 8 * 1024 + 1)
    guard let value = lws_get_urlarg_by_name(wsi, "access_token=", &buffer, Int32(buffer.count)) else { return nil }
    let token = String(cString: value)
    return token.isEmpty ? nil : token
  }

  func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
    let length = Int(lws_hdr_total_length(wsi, token))
    guard length > 0 else { return nil }
    var buffer = [CChar](repeating: 0, count: length + 1)
    guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  func log(warning: Bool, _ message: String, _ metadata: [(String, String)]) {
    onLog?(warning, message, metadata)
  }

  // MARK: Library logs

  /// lws's own warnings and errors, for the daemon's log; set once per process.
  /// `nonisolated(unsafe)`: set once by the daemon before the loop runs; read by lws on the loop thread.
  nonisolated(unsafe) public static var libraryLog: ((Bool, String) -> Void)?

  static func routeLibraryLogs() {
    tipsd_lws_set_logging { level, line in
      guard let line else { return }
      var text = String(cString: line)
      while text.hasSuffix("\n") { text.removeLast() }
      WebListener.libraryLog?(tipsd_lws_is_error(level) != 0, text)
    }
  }
}

/// The one C callback for both protocols; finds the listener through the context's user pointer.
private func webListenerCallback(
  _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
  _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
  guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
    return lws_callback_http_dummy(wsi, reason, user, input, length)
  }
  let listener = Unmanaged<WebListener>.fromOpaque(owner).takeUnretainedValue()
  return listener.handle(wsi, reason, user, input, length)
}
