import Glibc
public import TipsTransport

/// One webhook POST over HTTP/1.1 on the daemon's loop: a non-blocking TCP connect, the request written as the socket
/// takes it, the answer's status line read (``HTTPResponseHead``), the connection closed. Nothing waits longer than
/// `timeout` seconds in all. Redirects are not followed: a 3xx is an answer like any other, and delivery counts only
/// 2xx as delivered.
///
/// Plain `http://` is delivered to the loopback interface only (``WebhookURL`` refuses anything else at creation);
/// `https://` is not delivered by this build yet (the attempt fails with a clear result and is retried).
///
/// Loop thread only.
public final class WebhookHTTPClient {
  /// What an attempt came to.
  public enum Outcome: Sendable, Equatable {
    case status(Int)
    case failed(String)

    /// Whether the receiver took the message (2xx).
    public var delivered: Bool {
      if case .status(let code) = self { return (200...299).contains(code) }
      return false
    }

    /// A short text for the endpoint's last result.
    public var summary: String {
      switch self {
      case .status(let code): "HTTP \(code)"
      case .failed(let why): why
      }
    }
  }

  private let loop: any EventLoop
  private var descriptor: Int32 = -1
  private var poll: (any LoopPoll)?
  private var timer: (any LoopTimer)?
  private var pending: [UInt8] = []
  private var head = HTTPResponseHead()
  private var connected = false
  private var completion: ((Outcome) -> Void)?

  public init(loop: any EventLoop) { self.loop = loop }

  /// The request's bytes: a POST of `body` (JSON) with these extra headers.
  public static func request(url: WebhookURL, headers: [(String, String)], body: [UInt8]) -> [UInt8] {
    var text = "POST \(url.target) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nUser-Agent: tipsd-webhooks\r\n"
    text += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    text += "\r\n"
    return Array(text.utf8) + body
  }

  /// Posts once; `completion` is called once, on the loop, never inside this call.
  public func post(
    url: WebhookURL, headers: [(String, String)], body: [UInt8], timeout: Double,
    completion: @escaping (Outcome) -> Void
  ) {
    self.completion = completion
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    self.timer = timer
    guard url.scheme == .http else {
      timer.start(afterMilliseconds: 0) { [weak self] in self?.finish(.failed("https:// delivery is not built yet")) }
      return
    }
    timer.start(afterMilliseconds: UInt64(max(timeout, 0.01) * 1000)) { [weak self] in
      self?.finish(.failed("no answer within \(timeout) s"))
    }
    pending = Self.request(url: url, headers: headers, body: body)
    let started = connect(host: url.host, port: url.port)
    if case .failed = started {
      timer.stop()
      timer.start(afterMilliseconds: 0) { [weak self] in self?.finish(started) }
    }
  }

  /// Ends the attempt now (the node is stopping): the completion is not called.
  public func cancel() {
    completion = nil
    close()
  }

  // MARK: The socket

  private func connect(host: String, port: Int) -> Outcome {
    var storage = sockaddr_storage()
    var length: socklen_t
    let family: Int32
    let literal = host == "localhost" ? "127.0.0.1" : host
    if literal.contains(":") {
      family = AF_INET6
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = in_port_t(UInt16(port).bigEndian)
      guard inet_pton(AF_INET6, literal, &address.sin6_addr) == 1 else { return .failed("bad IPv6 address") }
      length = socklen_t(MemoryLayout<sockaddr_in6>.size)
      withUnsafeBytes(of: address) { source in
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
      }
    } else {
      family = AF_INET
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = in_port_t(UInt16(port).bigEndian)
      guard inet_pton(AF_INET, literal, &address.sin_addr) == 1 else { return .failed("bad IPv4 address") }
      length = socklen_t(MemoryLayout<sockaddr_in>.size)
      withUnsafeBytes(of: address) { source in
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
      }
    }
    let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return .failed("socket: \(String(cString: strerror(errno)))") }
    descriptor = fd
    let rc = withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
    }
    if rc != 0 && errno != EINPROGRESS { return .failed("connect: \(String(cString: strerror(errno)))") }
    do {
      poll = try loop.makePoll(fileDescriptor: fd)
    } catch {
      return .failed("cannot watch the socket: \(error)")
    }
    poll?.watch(.writable) { [weak self] ready in self?.handle(ready) }
    return .status(0)
  }

  private func handle(_ ready: PollEvents) {
    if !connected {
      var error: Int32 = 0
      var size = socklen_t(MemoryLayout<Int32>.size)
      getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &size)
      guard error == 0 else { return finish(.failed("connect: \(String(cString: strerror(error)))")) }
      connected = true
    }
    if !pending.isEmpty {
      let written = pending.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if written < 0 {
        guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
          return finish(.failed("send: \(String(cString: strerror(errno)))"))
        }
      } else {
        pending.removeFirst(written)
      }
      if !pending.isEmpty { return }
      poll?.watch(.readable) { [weak self] ready in self?.handle(ready) }
      return
    }
    guard ready.contains(.readable) else { return }
    var buffer = [UInt8](repeating: 0, count: 4_096)
    let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
    if count < 0 {
      guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
        return finish(.failed("recv: \(String(cString: strerror(errno)))"))
      }
      return
    }
    if count == 0 { return finish(.failed("the receiver closed the connection without an answer")) }
    switch head.consume(buffer.prefix(count)) {
    case .partial: return
    case .complete(let status): finish(.status(status))
    case .malformed(let why): finish(.failed(why))
    }
  }

  private func finish(_ outcome: Outcome) {
    close()
    let completion = self.completion
    self.completion = nil
    completion?(outcome)
  }

  private func close() {
    timer?.close()
    timer = nil
    poll?.close()
    poll = nil
    if descriptor >= 0 {
      Glibc.close(descriptor)
      descriptor = -1
    }
  }
}
