public import TipsFraming
public import TipsJSON
public import TipsProtocol
import TipsSystem
import TipsTransport

#if canImport(Glibc)
  import Glibc
#endif

/// Why a client call failed: the connection, a reply that does not read, or the daemon's error reply (``response``).
public struct ClientError: Error, Sendable, CustomStringConvertible {
  public var message: String
  /// The daemon's error, when it answered with one.
  public var response: ResponseError?

  public init(_ message: String, response: ResponseError? = nil) {
    self.message = message
    self.response = response
  }

  /// `method failed (code): message`.
  init(method: String, _ error: ResponseError) {
    self.init("\(method) failed (\(error.code.rawValue)): \(error.message)", response: error)
  }

  public var description: String { message }
}

/// A blocking JSON-RPC 2.0 client over a Unix socket or a pair of descriptors — the one client `tipsd call`, the
/// tests and the benchmarks share. Not for an event loop: every call blocks (with a timeout) until its reply.
///
/// Replies to requests sent with ``send(_:)`` and notifications that arrive while waiting for another reply are
/// kept (``replies``, ``notifications``) in arrival order.
///
/// `@unchecked Sendable`: a client may be handed to another thread (a test's reader thread, a benchmark's load
/// thread), but is used by one thread at a time; nothing in it is shared behind the caller's back.
public final class JSONRPCClient: @unchecked Sendable {
  public let readFD: Int32
  public let writeFD: Int32
  public let framing: Framing
  public let ownsDescriptors: Bool
  /// Seconds a read waits before giving up (the tests' hang guard).
  public var timeout: Double
  public var framer = Framer(maxMessageSize: 64 << 20)
  public var nextID: Int64 = 1
  /// Notifications received and not yet taken.
  public var notifications: [JSONValue] = []
  /// Replies received while waiting for another.
  public var replies: [JSONValue] = []
  public private(set) var closed = false
  /// Sees every message sent and received.
  public var tap: (any MessageTap)?
  private var readBuffer = [UInt8](repeating: 0, count: 65_536)

  public init(readFD: Int32, writeFD: Int32, framing: Framing, ownsDescriptors: Bool, timeout: Double = 10) {
    self.readFD = readFD
    self.writeFD = writeFD
    self.framing = framing
    self.ownsDescriptors = ownsDescriptors
    self.timeout = timeout
  }

  /// Connects to a daemon's Unix socket.
  public convenience init(socketPath: String, framing: Framing = .newline, timeout: Double = 10) throws(ClientError) {
    let fd = UnixSocketClient.connect(socketPath)
    guard fd >= 0 else {
      throw ClientError(
        "cannot connect to \(socketPath): \(System.message(-fd)) — is `tipsd serve --socket \(socketPath)` running?")
    }
    self.init(readFD: fd, writeFD: fd, framing: framing, ownsDescriptors: true, timeout: timeout)
  }

  deinit { close() }

  public func close() {
    guard !closed else { return }
    closed = true
    if ownsDescriptors {
      Glibc.close(readFD)
      if writeFD != readFD { Glibc.close(writeFD) }
    }
  }

  /// Closes abruptly: RST instead of FIN where possible (SO_LINGER 0).
  public func reset() {
    var linger = linger(l_onoff: 1, l_linger: 0)
    setsockopt(readFD, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
    close()
  }

  // MARK: Writing

  /// Writes raw bytes.
  public func write(_ bytes: [UInt8]) throws(ClientError) {
    do {
      try System.writeAll(writeFD, bytes, what: "write to the daemon")
    } catch {
      throw ClientError("\(error)")
    }
  }

  /// Sends one message (framed).
  public func send(_ message: JSONValue) throws(ClientError) {
    let payload = message.serialized()
    tap?.record("out", payload: payload)
    try write(Framer.encode(payload, as: framing))
  }

  /// Sends a raw payload as one frame (e.g. invalid JSON).
  public func sendRaw(_ text: String) throws(ClientError) {
    tap?.record("out", payload: Array(text.utf8))
    try write(Framer.encode(Array(text.utf8), as: framing))
  }

  /// Sends a request with a fresh id; returns the id.
  @discardableResult
  public func sendRequest(_ method: String, _ params: JSONValue? = nil) throws(ClientError) -> JSONValue {
    let id = JSONValue.int(nextID)
    nextID += 1
    var message: JSONObject = ["jsonrpc": "2.0", "id": id, "method": .string(method)]
    if let params { message["params"] = params }
    try send(.object(message))
    return id
  }

  /// Sends a notification (no id).
  public func notify(_ method: String, _ params: JSONValue? = nil) throws(ClientError) {
    var message: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
    if let params { message["params"] = params }
    try send(.object(message))
  }

  // MARK: Reading

  /// Waits up to `timeout` seconds for `fd` to be readable; false on timeout.
  private func waitReadable(until deadline: Double) -> Bool {
    while true {
      let remaining = deadline - System.monotonicSeconds()
      guard remaining > 0 else { return false }
      var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
      let ready = poll(&pfd, 1, Int32(min(remaining * 1000, 86_400_000)) + 1)
      if ready > 0 { return true }
      if ready < 0 && errno != EINTR { return true }  // let read report it
    }
  }

  /// Whether the daemon closed the connection (a read found end of input or failed): then a nil from
  /// ``readMessage(timeout:)`` or ``nextNotification(_:timeout:)`` means the connection is gone, not a timeout.
  public private(set) var atEndOfInput = false

  /// Reads once into the framer; false at end of input (or an error).
  private func fill() -> Bool {
    let read = readBuffer.withUnsafeMutableBytes { b in
      Result { () throws(SystemError) in try System.read(readFD, into: b) }
    }
    guard case .success(let n) = read, n > 0 else {
      atEndOfInput = true
      return false
    }
    readBuffer.withUnsafeBytes { framer.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    return true
  }

  /// Reads one message, or nil at end of input or after `timeout` seconds.
  public func readMessage(timeout: Double? = nil) throws(ClientError) -> JSONValue? {
    let deadline = System.monotonicSeconds() + (timeout ?? self.timeout)
    while true {
      if let event = framer.next() {
        switch event {
        case .message(let bytes):
          tap?.record("in", payload: bytes)
          do {
            return try JSONParser.parse(bytes)
          } catch {
            throw ClientError("the daemon sent a message that is not JSON: \(error)")
          }
        case .error(let error): throw ClientError("framing error from the daemon: \(error)")
        }
      }
      guard waitReadable(until: deadline), fill() else { return nil }
    }
  }

  /// Reads until the reply with `id` arrives; notifications and other replies are kept.
  public func awaitReply(id: JSONValue, timeout: Double? = nil) throws(ClientError) -> JSONValue {
    if let index = replies.firstIndex(where: { $0["id"] == id }) { return replies.remove(at: index) }
    let deadline = System.monotonicSeconds() + (timeout ?? self.timeout)
    while let message = try readMessage(timeout: max(0, deadline - System.monotonicSeconds())) {
      if message["method"] != nil && message["id"] == nil {
        notifications.append(message)
      } else if message["id"] == id {
        return message
      } else {
        replies.append(message)
      }
    }
    throw ClientError("no reply to request \(id.jsonString) (the daemon closed the connection or did not answer)")
  }

  /// Sends a request and returns the whole reply object.
  @discardableResult
  public func call(_ method: String, _ params: JSONValue? = nil) throws(ClientError) -> JSONValue {
    try awaitReply(id: try sendRequest(method, params))
  }

  /// Sends a request and returns its result, failing on an error reply (``ClientError/response``).
  @discardableResult
  public func result(_ method: String, _ params: JSONValue? = nil) throws(ClientError) -> JSONValue {
    let reply = try call(method, params)
    if let error = reply["error"] {
      guard let error = ResponseError(json: error) else { throw ClientError("\(method) failed: \(reply.jsonString)") }
      throw ClientError(method: method, error)
    }
    guard let result = reply["result"] else {
      throw ClientError("\(method): a reply with no result: \(reply.jsonString)")
    }
    return result
  }

  /// Sends `params` to `R`'s method and reads the result as its typed `Response`.
  @discardableResult
  public func result<R: RequestType>(_ type: R.Type, _ params: JSONValue? = nil) throws(ClientError) -> R.Response {
    let json = try result(R.method, params)
    do {
      return try R.Response(json: json)
    } catch {
      throw ClientError("\(R.method): \(error)")
    }
  }

  /// Sends a typed request and reads its typed `Response`.
  @discardableResult
  public func send<R: EncodableRequest>(_ request: R) throws(ClientError) -> R.Response {
    try result(R.self, request.encodedParams)
  }

  /// `initialize`, speaking this build's protocol (``ProtocolVersion/current``).
  @discardableResult
  public func initialize(
    name: String = "client", version: String? = nil, locale: String? = nil, installID: String? = nil
  ) throws(ClientError) -> InitializeRequest.Response {
    try send(InitializeRequest(clientName: name, clientVersion: version, locale: locale, installID: installID))
  }

  /// The next notification (of `method`, or any), waiting up to `timeout`.
  public func nextNotification(_ method: String? = nil, timeout: Double? = nil) throws(ClientError) -> JSONValue? {
    if let index = notifications.firstIndex(where: { method == nil || $0["method"]?.stringValue == method }) {
      return notifications.remove(at: index)
    }
    let deadline = System.monotonicSeconds() + (timeout ?? self.timeout)
    while let message = try readMessage(timeout: max(0, deadline - System.monotonicSeconds())) {
      if message["id"] != nil && message["method"] == nil {
        replies.append(message)
        continue
      }
      if method == nil || message["method"]?.stringValue == method { return message }
      notifications.append(message)
    }
    return nil
  }

  /// A barrier: a request that changes nothing (`clock/now`), answered after everything the daemon sent this
  /// client before handling it. Notifications that arrive first are kept in ``notifications``: after it returns
  /// they hold everything caused by requests (of any client) answered before the barrier was sent — how a test
  /// proves that something did *not* happen, without waiting and seeing.
  public func barrier() throws(ClientError) {
    _ = try send(ClockNowRequest())
  }

  /// Notifications (of `method`, or all) received before a ``barrier()``, taken out of ``notifications``.
  public func notificationsBeforeBarrier(_ method: String? = nil) throws(ClientError) -> [JSONValue] {
    try barrier()
    let matches: (JSONValue) -> Bool = { method == nil || $0["method"]?.stringValue == method }
    let taken = notifications.filter(matches)
    notifications.removeAll(where: matches)
    return taken
  }

  /// Reads until the peer closes (true) or `timeout` passes (false); messages read meanwhile are returned.
  public func readUntilEOF(timeout: Double? = nil) -> (messages: [JSONValue], eof: Bool) {
    var messages: [JSONValue] = []
    let deadline = System.monotonicSeconds() + (timeout ?? self.timeout)
    while true {
      while let event = framer.next() {
        if case .message(let bytes) = event, let value = try? JSONParser.parse(bytes) { messages.append(value) }
      }
      guard waitReadable(until: deadline) else { return (messages, false) }
      guard fill() else { return (messages, true) }
    }
  }

  /// Counts newline-framed messages without parsing them, reading until at least `count` more have arrived
  /// (benchmarks: the client's own cost stays out of the figure). Returns how many arrived; fewer at end of input.
  public func readRawLines(atLeast count: Int) -> Int {
    var got = 0
    while got < count {
      let read = readBuffer.withUnsafeMutableBytes { b in
        Result { () throws(SystemError) in try System.read(readFD, into: b) }
      }
      guard case .success(let n) = read, n > 0 else { return got }
      for i in 0..<n where readBuffer[i] == 0x0A { got += 1 }
    }
    return got
  }
}
