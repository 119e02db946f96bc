import CLibWebSockets
import Glibc
import Synchronization

/// One WebSocket connection as a ``ByteStream`` that delivers whole messages: each `onData` is one complete text
/// message (fragments reassembled), each `write` one text message. Loop thread only.
///
/// Output is framed here (a server's frames are unmasked) into one buffer per loop turn and handed to lws raw, in one
/// write per connection per turn rather than one per message; lws sends what the socket takes and keeps the rest.
/// While lws holds some, new messages wait here. ``pendingWriteBytes`` counts both — what the server's
/// back-pressure reads. Input back-pressure is lws's receive flow control.
public final class WebSocketStream: ByteStream {
  private static let nextID = Atomic<UInt64>(1 << 40)

  public let id: UInt64
  public var onData: ((UnsafeRawBufferPointer) -> Void)?
  public var onClose: ((CloseReason) -> Void)?
  public var peerCredentials: PeerCredentials? { nil }
  public var deliversMessages: Bool { true }
  public var partialMessage: UInt64? { inPieces ? partialsBegun : nil }
  // The fields touched for every message are `@exclusivity(unchecked)` (as the server's hot fields): loop thread only,
  // never passed inout across a call that touches them again; their dynamic checks were a measurable share of a
  // message's cost.
  @exclusivity(unchecked) public private(set) var pendingWriteBytes = 0
  public private(set) var isClosed = false
  /// The listen address it came in on.
  public let listenAddress: ListenAddress?
  /// Who the upgrade's token signed in as (hosted mode's ``WebListener/authenticate``); nil without one.
  public internal(set) var identity: (any Sendable)?
  /// The path its upgrade asked for (`/`, or hosted mode's `/apps/<id>`).
  public internal(set) var path: String?
  /// The peer its TCP connection counts against (`ip:ADDRESS`), when the listener has a limiter.
  public internal(set) var peer: String?

  private let wsi: OpaquePointer
  private unowned let listener: WebListener
  /// LWS_PRE bytes of headroom, then the frames written this turn.
  @exclusivity(unchecked) private var outbox: [UInt8] = []
  /// Bytes of the last raw write that lws may still hold.
  private var handedOver = 0
  private var flushScheduled = false
  @exclusivity(unchecked) private var partial: [UInt8] = []
  /// Messages begun in pieces so far (``partialMessage``).
  private var partialsBegun: UInt64 = 0
  /// Whether a message is arriving in pieces (fragments, or a frame lws hands over in parts).
  private var inPieces = false
  private var reading = true
  private var pingDue = false
  /// Close once everything is written (`close(after: true)`), with this code.
  private var closeCode: lws_close_status?
  private var closeNow = false
  private var killRequested = false
  private var closeReason: CloseReason?
  /// lws freed the connection: `wsi` must not be touched again.
  private var destroyed = false
  /// When a frame (or pong) last arrived, in loop milliseconds.
  @exclusivity(unchecked) private(set) var lastHeard: UInt64

  init(wsi: OpaquePointer, listener: WebListener) {
    self.wsi = wsi
    self.listener = listener
    id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    listenAddress = listener.listenAddress(of: wsi)
    lastHeard = listener.loop.now
    // Reading is on: the server takes the stream (and sets onData) within the callback that created it.
  }

  // MARK: ByteStream

  public func startReading() {
    guard !isClosed, !reading else { return }
    reading = true
    lws_rx_flow_control(wsi, 1)
  }

  public func stopReading() {
    guard !isClosed, reading else { return }
    reading = false
    lws_rx_flow_control(wsi, 0)
  }

  /// Frames `bytes` as one text message; it leaves at the end of this loop turn.
  @discardableResult
  public func write(_ bytes: [UInt8]) -> Bool {
    guard !isClosed else { return false }
    let before = startOutbox(adding: bytes.count + 10)
    appendFrameHeader(bytes.count)
    outbox += bytes
    wrote(outbox.count - before)
    return true
  }

  /// Frames each message as ``write(_:)`` does, straight from the buffer (no array per message).
  @discardableResult
  public func write(messages buffer: [UInt8], ends: [Int]) -> Bool {
    guard !isClosed else { return false }
    let before = startOutbox(adding: buffer.count + 9 * ends.count)
    buffer.withUnsafeBufferPointer { buffer in
      var start = 0
      for end in ends {
        appendFrameHeader(end - 1 - start)
        outbox.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<end - 1]))
        start = end
      }
    }
    wrote(outbox.count - before)
    return true
  }

  /// Makes room in the outbox (LWS_PRE bytes of headroom first, when it is empty); returns its length before.
  private func startOutbox(adding bytes: Int) -> Int {
    let pre = tipsd_lws_pre()
    if outbox.isEmpty {
      // Only here: reserving on every write would reallocate to the exact size each time.
      outbox.reserveCapacity(pre + max(bytes, 1024))
      outbox.append(contentsOf: repeatElement(0, count: pre))
    }
    return outbox.count
  }

  /// A text frame's header (FIN, text; a server's frames are unmasked) for a payload of `count` bytes.
  private func appendFrameHeader(_ count: Int) {
    outbox.append(0x81)
    if count < 126 {
      outbox.append(UInt8(count))
    } else if count <= 0xFFFF {
      outbox.append(126)
      outbox.append(UInt8(count >> 8))
      outbox.append(UInt8(count & 0xFF))
    } else {
      outbox.append(127)
      for shift in stride(from: 56, through: 0, by: -8) { outbox.append(UInt8((count >> shift) & 0xFF)) }
    }
  }

  /// Counts what a write added to the outbox and makes sure it leaves at the end of the turn.
  private func wrote(_ bytes: Int) {
    pendingWriteBytes += bytes
    if !flushScheduled {
      flushScheduled = true
      listener.flushAtEndOfTurn(self)
    }
  }

  /// Closes: with `flushing`, once what was written is out, with close code 1000 (1001 when the daemon stops);
  /// without, at once.
  public func close(after flushing: Bool, reason: String) {
    if isClosed {
      if !flushing { abandon() }
      return
    }
    isClosed = true
    closeReason = .local(reason)
    closeCode = closeCode ?? (reason == Self.daemonStopping ? LWS_CLOSE_STATUS_GOINGAWAY : LWS_CLOSE_STATUS_NORMAL)
    if flushing {
      lws_callback_on_writable(wsi)
    } else {
      abandon()
    }
  }

  // MARK: Output

  /// End of the loop turn: hand this turn's frames to lws in one raw write, unless lws still holds some (then the
  /// writable callback does it).
  func flushOutbox() {
    flushScheduled = false
    guard !destroyed, outbox.count > tipsd_lws_pre(), !closeNow else { return }
    if pingDue || lws_partial_buffered(wsi) != 0 {
      lws_callback_on_writable(wsi)
      return
    }
    if sendOutbox() < 0 { abandon() }
  }

  /// One raw write of the framed outbox; lws keeps what the socket does not take.
  @discardableResult
  private func sendOutbox() -> Int32 {
    let pre = tipsd_lws_pre()
    let length = outbox.count - pre
    let sent = outbox.withUnsafeMutableBufferPointer { lws_write(wsi, $0.baseAddress! + pre, length, LWS_WRITE_HTTP) }
    outbox = []
    if lws_partial_buffered(wsi) != 0 {
      handedOver = length
      pendingWriteBytes = length
      lws_callback_on_writable(wsi)  // to learn when it has drained
    } else {
      handedOver = 0
      pendingWriteBytes = 0
    }
    return sent
  }

  // MARK: From the listener

  /// Part of a message arrived: lws hands over a frame's payload in one or more pieces (`remaining` bytes of the
  /// frame still to come), and a message in one or more frames (`final` on the last). Returns non-zero to make lws
  /// close the connection.
  func received(_ bytes: UnsafeRawBufferPointer, final: Bool, remaining: Int, binary: Bool) -> Int32 {
    heard()
    guard !binary else {
      return fail(LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, "binary frames are not accepted: send JSON-RPC as text")
    }
    guard partial.count + bytes.count <= listener.configuration.maxMessageSize else {
      return fail(
        LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
        "message over \(listener.configuration.maxMessageSize) bytes")
    }
    if partial.isEmpty && final && remaining == 0 {
      // A whole message in one piece (the usual case): handed over from lws's buffer, with no reassembly copy.
      if !isClosed { onData?(bytes) }
      return 0
    }
    if !inPieces {
      inPieces = true
      partialsBegun &+= 1
    }
    partial.append(contentsOf: bytes)
    guard final && remaining == 0 else { return 0 }
    let message = partial
    partial.removeAll(keepingCapacity: false)
    inPieces = false
    if !isClosed { message.withUnsafeBytes { onData?($0) } }
    return 0
  }

  /// Refuses the connection from inside a receive callback, with a close code and reason.
  private func fail(_ code: lws_close_status, _ reason: String) -> Int32 {
    listener.log(warning: true, "closing a WebSocket connection", [("connection", String(id)), ("reason", reason)])
    var text = Array(reason.utf8.prefix(120))
    text.withUnsafeMutableBufferPointer { lws_close_reason(wsi, code, $0.baseAddress, $0.count) }
    isClosed = true
    closeReason = .local(reason)
    dropQueue()
    return -1
  }

  func heard() {
    lastHeard = listener.loop.now
    pingedAt = nil
  }

  func peerClosing() {
    closeReason = closeReason ?? .eof
  }

  /// lws may write (having sent what it held): a ping, this turn's frames, or the close.
  func writable() -> Int32 {
    if closeNow { return -1 }
    if handedOver > 0 {
      pendingWriteBytes -= handedOver
      handedOver = 0
    }
    if pingDue {
      pingDue = false
      // The ping carries a payload: libwebsockets 4.1 does not report a pong without one (an empty pong never
      // reaches LWS_CALLBACK_RECEIVE_PONG), and a client answers an empty ping with an empty pong.
      var frame = [UInt8](repeating: 0, count: tipsd_lws_pre()) + Self.pingPayload
      let sent = frame.withUnsafeMutableBufferPointer {
        lws_write(wsi, $0.baseAddress! + tipsd_lws_pre(), Self.pingPayload.count, LWS_WRITE_PING)
      }
      if sent < 0 { return -1 }
      if outbox.count > tipsd_lws_pre() || closeCode != nil { lws_callback_on_writable(wsi) }
      return 0
    }
    if outbox.count > tipsd_lws_pre() {
      if sendOutbox() < 0 { return -1 }
      if closeCode != nil && handedOver == 0 { lws_callback_on_writable(wsi) }
      return 0
    }
    if let code = closeCode, handedOver == 0 {
      // The close frame is written here, then the connection dropped: from this callback, libwebsockets 4.1 drops
      // the connection without sending the frame lws_close_reason prepares (it does from a receive callback).
      let reason: [UInt8] = code == LWS_CLOSE_STATUS_GOINGAWAY ? Array("daemon shutting down".utf8) : []
      let pre = tipsd_lws_pre()
      var frame = [UInt8](repeating: 0, count: pre) + [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + reason
      // LWS_WRITE_CLOSE (4) is what lws's own close path writes with; the public header leaves it out.
      let writeClose = lws_write_protocol(rawValue: 4)
      _ = frame.withUnsafeMutableBufferPointer { lws_write(wsi, $0.baseAddress! + pre, 2 + reason.count, writeClose) }
      return -1
    }
    return 0
  }

  /// What a ping carries (its pong brings it back).
  static let pingPayload = Array("tipsd".utf8)

  /// When the last ping went out (loop milliseconds), while it is unanswered: nothing was heard since.
  private(set) var pingedAt: UInt64?

  func sendPing() {
    guard !isClosed else { return }
    pingedAt = listener.loop.now
    pingDue = true
    lws_callback_on_writable(wsi)
  }

  /// The daemon is stopping: what is queued still goes out, then the close says 1001 (going away).
  func loopClosing() {
    closeCode = LWS_CLOSE_STATUS_GOINGAWAY
    if !isClosed {
      isClosed = true
      closeReason = .local("daemon stopping")
    }
  }

  /// Drops the connection without waiting for the socket to become writable (a peer that reads nothing may never
  /// make it writable again): lws closes it at once, or right after the lws callback we are inside returns.
  func abandon() {
    isClosed = true
    closeReason = closeReason ?? .local("peer stopped answering pings")
    dropQueue()
    closeNow = true
    guard !killRequested else { return }
    killRequested = true
    listener.kill(self)
  }

  /// Closes the connection at once (outside any lws callback).
  func killNow() {
    lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_SYNC)
  }

  /// lws closed the connection: report it once.
  /// lws began closing (after our close, or the peer's, or an error): nothing more is read or written.
  func lwsClosing() {
    isClosed = true
    closeNow = true
    dropQueue()
  }

  func didClose() {
    destroyed = true
    isClosed = true
    dropQueue()
    let callback = onClose
    onClose = nil
    onData = nil
    callback?(closeReason ?? .eof)
  }

  private func dropQueue() {
    outbox = []
    handedOver = 0
    pendingWriteBytes = 0
  }
}
