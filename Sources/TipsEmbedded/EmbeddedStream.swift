import Synchronization
public import TipsFraming
public import TipsJSON
public import TipsProtocol
public import TipsTransport

#if canImport(Glibc)
  import Glibc
#endif

/// An in-memory ``ByteStream`` on an ``EmbeddedEventLoop``: the server's end is the `ByteStream`, the test plays
/// the peer through ``send(_:)``, ``receive()``, ``peerClose()`` and ``peerReset()``.
///
/// The peer's receive buffer holds ``window`` bytes (unlimited by default); what the server writes beyond it stays
/// in ``pendingWriteBytes`` until the peer reads, exactly as a socket's send queue would — which is how tests drive
/// back-pressure and coalescing deterministically.
public final class EmbeddedStream: ByteStream {
  private static let nextID = Atomic<UInt64>(1)

  public let id: UInt64
  public var onData: ((UnsafeRawBufferPointer) -> Void)?
  public var onClose: ((CloseReason) -> Void)?
  /// What the server reads as the peer's `SO_PEERCRED` (nil by default, like stdio).
  public var peerCredentials: PeerCredentials?
  /// Unread bytes the peer's buffer holds before the server's writes stay pending; nil: unlimited.
  public var window: Int?
  public private(set) var isClosed = false
  /// The close reported through `onClose`, once it has been.
  public private(set) var closeReason: CloseReason?
  /// Whether the server is reading (it stops under input back-pressure).
  public private(set) var isReading = false
  /// How many times the server wrote (a turn's replies to a byte stream go out in one write).
  public private(set) var writeCount = 0

  private unowned let loop: EmbeddedEventLoop
  /// Written by the server, in the peer's buffer.
  private var inbox: [UInt8] = []
  /// Written by the server beyond the window.
  private var pending: [UInt8] = []
  /// Sent by the peer, not yet read by the server.
  private var outbox: [[UInt8]] = []
  private var peerEnded = false
  private var closeScheduled = false

  public init(loop: EmbeddedEventLoop) {
    self.loop = loop
    id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
  }

  // MARK: ByteStream (the server's end)

  public var pendingWriteBytes: Int { pending.count }

  public func startReading() {
    guard !isClosed, !isReading else { return }
    isReading = true
    if !outbox.isEmpty || peerEnded { loop.scheduleIO { [self] in deliver() } }
  }

  public func stopReading() { isReading = false }

  @discardableResult
  public func write(_ bytes: [UInt8]) -> Bool {
    guard !isClosed else { return false }
    writeCount += 1
    pending += bytes
    moveIntoWindow()
    return true
  }

  public func close(after flushing: Bool, reason: String) {
    if !flushing { pending.removeAll() }
    guard !isClosed else {
      finishCloseIfDrained()
      return
    }
    isClosed = true
    isReading = false
    closeReason = closeReason ?? .local(reason)
    finishCloseIfDrained()
  }

  // MARK: The peer

  /// The peer sends bytes (delivered to the server in the next turn, while it reads).
  public func send(_ bytes: [UInt8]) {
    guard !peerEnded else { return }
    outbox.append(bytes)
    loop.scheduleIO { [self] in deliver() }
  }

  /// The peer reads everything in its buffer, making room for what the server still has pending.
  public func receive() -> [UInt8] {
    let taken = inbox
    inbox.removeAll()
    if !pending.isEmpty {
      moveIntoWindow()
      // Like a write completing: the loop runs a turn, and the server hands over more.
      loop.scheduleIO {}
    }
    finishCloseIfDrained()
    return taken
  }

  /// Bytes waiting in the peer's buffer.
  public var unread: Int { inbox.count }

  /// The peer closes its end (FIN): the server reads what was sent, sees end of input, flushes what it owes and
  /// closes.
  public func peerClose() {
    peerEnded = true
    loop.scheduleIO { [self] in deliver() }
  }

  /// The peer vanishes (RST): the server's end fails at once; what it still owed is dropped.
  public func peerReset() {
    loop.scheduleIO { [self] in
      guard !closeScheduled else { return }
      outbox.removeAll()
      pending.removeAll()
      inbox.removeAll()
      if !isClosed { closeReason = .error(UVError(code: -ECONNRESET, operation: "read")) }
      isClosed = true
      isReading = false
      finishCloseIfDrained()
    }
  }

  /// Whether the server's end has closed (``onClose`` was called).
  public var hasClosed: Bool { closeScheduled && onClose == nil }

  // MARK: Internals

  private func moveIntoWindow() {
    let room = window.map { max(0, $0 - inbox.count) } ?? pending.count
    guard room > 0, !pending.isEmpty else { return }
    let count = min(room, pending.count)
    inbox += pending[..<count]
    pending.removeFirst(count)
  }

  private func deliver() {
    while isReading, !isClosed, !outbox.isEmpty {
      let chunk = outbox.removeFirst()
      chunk.withUnsafeBytes { onData?($0) }
    }
    if peerEnded, outbox.isEmpty, isReading, !isClosed {
      // End of input: replies produced in this turn still go out (as UVStream does at EOF).
      isReading = false
      loop.atEndOfTurn { [self] in
        closeReason = closeReason ?? .eof
        close(after: true, reason: "end of input")
      }
    }
  }

  /// Reports the close once the server's pending writes are out (a flushing close waits for the peer to read).
  private func finishCloseIfDrained() {
    guard isClosed, pending.isEmpty, !closeScheduled else { return }
    closeScheduled = true
    loop.scheduleIO { [self] in
      let callback = onClose
      onClose = nil
      onData = nil
      callback?(closeReason ?? .local("closed"))
    }
  }
}

/// A JSON-RPC client over an ``EmbeddedStream``: sends messages, runs the loop, and reads what the server wrote.
/// Everything is synchronous and in-process.
public final class EmbeddedClient {
  public let stream: EmbeddedStream
  public let loop: EmbeddedEventLoop
  public let framing: Framing
  private var framer = Framer(maxMessageSize: 64 << 20)
  /// Messages read and not yet taken, in arrival order.
  public private(set) var inbox: [JSONValue] = []
  private var nextID: Int64 = 1
  /// Sees every message sent and received.
  public var tap: (any MessageTap)?
  /// Finds the messages in what ``write(_:)`` sends, for the tap.
  private var written = Framer(maxMessageSize: 64 << 20)

  public init(stream: EmbeddedStream, loop: EmbeddedEventLoop, framing: Framing = .newline) {
    self.stream = stream
    self.loop = loop
    self.framing = framing
  }

  /// Sends one message (framed); nothing happens until the loop runs.
  public func send(_ message: JSONValue) {
    let payload = message.serialized()
    tap?.record("out", payload: payload)
    stream.send(Framer.encode(payload, as: framing))
  }

  /// Sends raw text as one frame (e.g. invalid JSON).
  public func sendRaw(_ text: String) {
    tap?.record("out", payload: Array(text.utf8))
    stream.send(Framer.encode(Array(text.utf8), as: framing))
  }

  /// Sends bytes as they are (several messages, or part of one); the ``tap`` sees the messages they complete.
  public func write(_ bytes: [UInt8]) {
    if let tap {
      bytes.withUnsafeBytes { written.feed($0) }
      while case .message(let payload)? = written.next() { tap.record("out", payload: payload) }
    }
    stream.send(bytes)
  }

  /// Sends a request (an id of its own) without running the loop; returns the id.
  @discardableResult
  public func sendRequest(_ method: String, _ params: JSONValue? = nil) -> JSONValue {
    let id = JSONValue.int(nextID)
    nextID += 1
    var message: JSONObject = ["jsonrpc": "2.0", "id": id, "method": .string(method)]
    if let params { message["params"] = params }
    send(.object(message))
    return id
  }

  /// Sends a notification (no id).
  public func notify(_ method: String, _ params: JSONValue? = nil) {
    var message: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
    if let params { message["params"] = params }
    send(.object(message))
  }

  /// Reads what the server wrote into ``inbox`` (no loop turn).
  public func read() throws {
    let bytes = stream.receive()
    bytes.withUnsafeBytes { framer.feed($0) }
    while let event = framer.next() {
      switch event {
      case .message(let payload):
        tap?.record("in", payload: payload)
        inbox.append(try JSONParser.parse(payload))
      case .error(let error): throw EmbeddedClientError("framing error from the server: \(error)")
      }
    }
  }

  /// Runs the loop, then reads.
  public func flush() throws {
    loop.run()
    try read()
    loop.run()
  }

  /// Sends a request, runs the loop, and returns its reply; notifications read on the way stay in ``inbox``.
  @discardableResult
  public func call(_ method: String, _ params: JSONValue? = nil) throws -> JSONValue {
    let id = sendRequest(method, params)
    try flush()
    return try takeReply(id: id)
  }

  /// Like ``call(_:_:)`` but returns the result, failing on an error reply.
  @discardableResult
  public func result(_ method: String, _ params: JSONValue? = nil) throws -> JSONValue {
    let reply = try call(method, params)
    guard let result = reply["result"] else { throw EmbeddedClientError("\(method) failed: \(reply.jsonString)") }
    return result
  }

  /// Sends `params` to `R`'s method and reads the result as its typed `Response`.
  @discardableResult
  public func result<R: RequestType>(_ type: R.Type, _ params: JSONValue? = nil) throws -> R.Response {
    try R.Response(json: try result(R.method, params))
  }

  /// Sends a typed request and reads its typed `Response`.
  @discardableResult
  public func send<R: EncodableRequest>(_ request: R) throws -> R.Response {
    try result(R.self, request.encodedParams)
  }

  /// Takes the reply with `id` out of the inbox.
  public func takeReply(id: JSONValue) throws -> JSONValue {
    guard let index = inbox.firstIndex(where: { $0["id"] == id && $0["method"] == nil }) else {
      throw EmbeddedClientError("no reply to \(id.jsonString); inbox: \(inbox.map(\.jsonString))")
    }
    return inbox.remove(at: index)
  }

  /// Takes the `n` oldest messages out of the inbox (fewer when it holds fewer).
  public func takeFirst(_ n: Int) -> [JSONValue] {
    let taken = Array(inbox.prefix(n))
    inbox.removeFirst(taken.count)
    return taken
  }

  /// Takes everything out of the inbox.
  public func takeAll() -> [JSONValue] {
    defer { inbox.removeAll() }
    return inbox
  }

  /// Takes the notifications (of `method`, or all) out of the inbox, in order.
  @discardableResult
  public func takeNotifications(_ method: String? = nil) -> [JSONValue] {
    let taken = inbox.filter { $0["id"] == nil && (method == nil || $0["method"]?.stringValue == method) }
    inbox.removeAll { $0["id"] == nil && (method == nil || $0["method"]?.stringValue == method) }
    return taken
  }

  /// `initialize`, speaking this build's protocol (``ProtocolVersion/current``).
  @discardableResult
  public func initialize(name: String = "embedded", locale: String? = nil, installID: String? = nil) throws
    -> InitializeRequest.Response
  {
    try send(InitializeRequest(clientName: name, locale: locale, installID: installID))
  }
}

/// A failure of an ``EmbeddedClient`` call: no reply, an error reply where a result was expected, or bytes from the
/// server that do not frame.
public struct EmbeddedClientError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}
