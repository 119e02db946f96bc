// UVStream: a byte stream over libuv (Unix-socket client, or a stdio pair).
import CLibUV
import Synchronization

/// Why a `UVStream` closed; reported exactly once through `onClose`.
public enum CloseReason: Sendable, Equatable, CustomStringConvertible {
  /// The peer finished sending (end of input). Replies queued in the same
  /// loop turn were still flushed before the connection closed.
  case eof
  /// A read or write failed, e.g. `ECONNRESET` or `EPIPE` from a vanished peer.
  case error(UVError)
  /// Closed on this side via `close(after:reason:)` or `UVLoop.close()`.
  case local(String)

  public var description: String {
    switch self {
    case .eof: return "end of input"
    case .error(let error): return "error: \(error)"
    case .local(let reason): return "closed locally: \(reason)"
    }
  }
}

/// A bidirectional byte stream: an accepted Unix-socket client, or stdin/stdout
/// (separate read and write descriptors). Loop thread only.
///
/// Reading: call `startReading()`; bytes arrive in `onData` as a pointer into
/// the loop's shared 64 KiB read buffer, valid only during the call (copy what
/// you keep). `stopReading()` applies back-pressure.
///
/// Writing: `write(_:)` tries a direct non-blocking write and queues whatever
/// remains with `uv_write` (copied, freed on completion). `pendingWriteBytes`
/// counts queued bytes so callers can bound their outgoing queue.
///
/// Closing: `onClose` fires exactly once, after every handle has closed, all
/// pending writes were completed or cancelled (`pendingWriteBytes == 0`), and
/// the callbacks were cleared (breaking reference cycles). It is safe to close
/// from inside `onData`, `onDrain` or any other callback. At end of input the
/// connection closes itself with `.eof` at the end of the current loop turn,
/// after `afterEachTurn` handlers, flushing writes queued by then.
public final class UVStream: ByteStream, LoopHandleOwner {
  /// Process-unique, increasing identifier (for logs and maps).
  public let id: UInt64
  let loop: UVLoop
  /// The stream we read from; for sockets also the one we write to.
  private let input: UnsafeMutablePointer<uv_stream_t>
  /// The stream we write to (`== input` for sockets).
  private let output: UnsafeMutablePointer<uv_stream_t>
  private let isUnixSocket: Bool

  /// Called with each chunk read. The buffer is only valid during the call.
  public var onData: ((UnsafeRawBufferPointer) -> Void)?
  /// Called exactly once when the connection has fully closed.
  public var onClose: ((CloseReason) -> Void)?

  /// Bytes handed to libuv that have not been written yet. Read for every reply; `@exclusivity(unchecked)`: the
  /// loop thread only, never passed inout.
  @exclusivity(unchecked) public private(set) var pendingWriteBytes = 0

  private enum State { case open, flushing, closing, closed }
  private var state = State.open
  private var reason: CloseReason?
  private var reading = false
  private var inputEnded = false
  private var openHandles: Int
  private var cachedCredentials: PeerCredentials?

  private static let nextID = Atomic<UInt64>(1)

  /// Takes ownership of initialised stream handles (`data` must still be unset).
  init(
    loop: UVLoop, input: UnsafeMutablePointer<uv_stream_t>,
    output: UnsafeMutablePointer<uv_stream_t>, isUnixSocket: Bool
  ) {
    self.id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    self.loop = loop
    self.input = input
    self.output = output
    self.isUnixSocket = isUnixSocket
    self.openHandles = input == output ? 1 : 2
    retainOwner(self, in: asHandle(input))
    if output != input { retainOwner(self, in: asHandle(output)) }
  }

  /// `true` once closing has begun (or finished); writes are then ignored.
  public var isClosed: Bool { state != .open }

  // MARK: Reading

  /// Starts (or resumes) delivering bytes to `onData`. No-op if already reading,
  /// closed, or after end of input.
  public func startReading() {
    loop.assertOnLoopThread()
    guard state == .open, !reading, !inputEnded else { return }
    let rc = uv_read_start(
      input,
      { handle, _, buf in
        // alloc_cb: hand out the loop's shared buffer (no per-read allocation).
        guard let buf else { return }
        guard let connection = owner(of: handle, as: UVStream.self) else {
          buf.pointee = uv_buf_init(nil, 0)
          return
        }
        let storage = connection.loop.readBuffer
        buf.pointee = uv_buf_init(storage.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(storage.count))
      },
      { stream, nread, _ in
        guard let stream, let connection = owner(of: asHandle(stream), as: UVStream.self) else { return }
        connection.didRead(nread)
      })
    if rc < 0 {
      closeNow(.error(UVError(code: rc, operation: "uv_read_start")))
      return
    }
    reading = true
  }

  /// Stops delivering bytes (back-pressure); resume with `startReading()`.
  public func stopReading() {
    loop.assertOnLoopThread()
    stopReadingInternal()
  }

  private func stopReadingInternal() {
    guard reading else { return }
    reading = false
    if state == .open || state == .flushing { _ = uv_read_stop(input) }
  }

  private func didRead(_ nread: Int) {
    if nread > 0 {
      onData?(UnsafeRawBufferPointer(start: loop.readBuffer.baseAddress, count: nread))
    } else if nread == Int(UV_EOF.rawValue) {
      didReachEndOfInput()
    } else if nread < 0 {
      closeNow(.error(UVError(code: Int32(truncatingIfNeeded: nread), operation: "read")))
    }
    // nread == 0 is EAGAIN: nothing to do.
  }

  private func didReachEndOfInput() {
    stopReadingInternal()
    inputEnded = true
    guard state == .open else { return }
    // Leave writes open for the rest of this turn so replies to the final
    // requests (e.g. produced by an afterEachTurn group commit) get out.
    loop.atEndOfTurn { [self] in
      beginClose(flushing: true, reason: .eof)
    }
  }

  // MARK: Writing

  /// Writes `bytes`. Returns `false` (dropping the bytes) if the connection is closing.
  @discardableResult
  public func write(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { write($0) }
  }

  /// Writes a copy of `bytes`. Returns `false` (dropping the bytes) if the connection is closing.
  @discardableResult
  public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
    loop.assertOnLoopThread()
    guard state == .open else { return false }
    guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
    precondition(bytes.count <= Int(UInt32.max), "UVStream.write: chunk larger than 4 GiB")
    var written = 0
    if pendingWriteBytes == 0 {
      // Fast path: nothing queued, so a direct write keeps ordering. Errors other
      // than EAGAIN resurface through uv_write's callback below.
      var buf = uv_buf_init(
        UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: CChar.self)), UInt32(bytes.count))
      let n = uv_try_write(output, &buf, 1)
      if n > 0 { written = Int(n) }
      if written == bytes.count { return true }
    }
    let remaining = UnsafeRawBufferPointer(rebasing: bytes[written...])
    let pending = PendingWrite(connection: self, copying: remaining)
    var buf = uv_buf_init(pending.storage.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(remaining.count))
    pending.request.pointee.data = Unmanaged.passRetained(pending).toOpaque()
    let rc = uv_write(pending.request, output, &buf, 1) { request, status in
      guard let request, let data = request.pointee.data else { return }
      let pending = Unmanaged<PendingWrite>.fromOpaque(data).takeRetainedValue()
      pending.connection.didWrite(pending.storage.count, status: status)
      // `pending` deinit frees the request and the byte copy.
    }
    if rc < 0 {
      Unmanaged<PendingWrite>.fromOpaque(pending.request.pointee.data!).release()
      closeNow(.error(UVError(code: rc, operation: "uv_write")))
      return false
    }
    pendingWriteBytes += remaining.count
    return true
  }

  private func didWrite(_ count: Int, status: Int32) {
    pendingWriteBytes -= count
    if status < 0 {
      // ECANCELED: the handle is closing and libuv is cancelling the queue; nothing to do.
      if status != UV_ECANCELED.rawValue {
        closeNow(.error(UVError(code: status, operation: "write")))
      }
      return
    }
  }

  // MARK: Closing

  /// Closes the connection. With `flushing`, pending writes are completed first
  /// (then `uv_shutdown`, then close); without it they are cancelled. Reading
  /// stops immediately and later writes are dropped. Idempotent; a flushing close
  /// can be escalated by a later non-flushing one. Note that a flushing close
  /// waits for the peer to read: bound it with a timer if the peer may stall.
  public func close(after flushing: Bool, reason: String) {
    loop.assertOnLoopThread()
    beginClose(flushing: flushing, reason: .local(reason))
  }

  private func beginClose(flushing: Bool, reason: CloseReason) {
    switch state {
    case .closing, .closed:
      return
    case .flushing:
      if !flushing { closeNow(nil) }
      return
    case .open:
      break
    }
    if self.reason == nil { self.reason = reason }
    stopReadingInternal()
    guard flushing else { closeNow(nil); return }
    state = .flushing
    let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
    request.initialize(to: uv_shutdown_t())
    request.pointee.data = Unmanaged.passRetained(self).toOpaque()
    // uv_shutdown completes after all queued writes; on pipes/ttys shutdown(2)
    // then fails with ENOTSOCK, which is fine: we close either way.
    let rc = uv_shutdown(request, output) { request, _ in
      guard let request else { return }
      let connection = request.pointee.data.map { Unmanaged<UVStream>.fromOpaque($0).takeRetainedValue() }
      request.deallocate()
      connection?.closeNow(nil)
    }
    if rc < 0 {
      Unmanaged<UVStream>.fromOpaque(request.pointee.data!).release()
      request.deallocate()
      closeNow(nil)
    }
  }

  /// Starts closing the handles now; `onClose` follows from the close callback.
  private func closeNow(_ why: CloseReason?) {
    if reason == nil, let why { reason = why }
    guard state == .open || state == .flushing else { return }
    state = .closing
    reading = false
    for stream in (input == output ? [input] : [input, output]) where uv_is_closing(asHandle(stream)) == 0 {
      uv_close(asHandle(stream)) { handle in
        guard let handle, let connection = releaseOwner(of: handle, as: UVStream.self) else { return }
        deallocateStreamHandle(handle)
        connection.handleDidClose()
      }
    }
  }

  private func handleDidClose() {
    openHandles -= 1
    guard openHandles == 0 else { return }
    state = .closed
    let callback = onClose
    onClose = nil
    onData = nil
    callback?(reason ?? .local("closed"))
  }

  func closeForLoopShutdown() {
    beginClose(flushing: false, reason: .local("event loop closed"))
  }

  // MARK: Peer

  /// The peer's process credentials (`SO_PEERCRED`) for Unix-socket
  /// connections; `nil` for stdio or once the connection is closing.
  public var peerCredentials: PeerCredentials? {
    loop.assertOnLoopThread()
    if let cachedCredentials { return cachedCredentials }
    guard isUnixSocket, state == .open || state == .flushing else { return nil }
    var fd: uv_os_fd_t = -1
    guard uv_fileno(asHandle(input), &fd) == 0 else { return nil }
    var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
    guard tipsd_peer_credentials(fd, &pid, &uid, &gid) == 0 else { return nil }
    cachedCredentials = PeerCredentials(pid: pid, uid: uid, gid: gid)
    return cachedCredentials
  }
}

/// One queued `uv_write`: the request plus a private copy of the bytes.
/// Retained through `request.data` until the write callback.
private final class PendingWrite {
  let connection: UVStream
  let request: UnsafeMutablePointer<uv_write_t>
  let storage: UnsafeMutableRawBufferPointer

  init(connection: UVStream, copying bytes: UnsafeRawBufferPointer) {
    self.connection = connection
    request = .allocate(capacity: 1)
    request.initialize(to: uv_write_t())
    storage = .allocate(byteCount: bytes.count, alignment: 1)
    storage.copyMemory(from: bytes)
  }

  deinit {
    request.deallocate()
    storage.deallocate()
  }
}

// MARK: - Stream handle helpers

/// Frees a closed stream handle according to the concrete type it was allocated as.
func deallocateStreamHandle(_ handle: UnsafeMutablePointer<uv_handle_t>) {
  let raw = UnsafeMutableRawPointer(handle)
  switch handle.pointee.type {
  case UV_NAMED_PIPE: raw.assumingMemoryBound(to: uv_pipe_t.self).deallocate()
  case UV_TTY: raw.assumingMemoryBound(to: uv_tty_t.self).deallocate()
  case UV_TCP: raw.assumingMemoryBound(to: uv_tcp_t.self).deallocate()
  default: preconditionFailure("deallocateStreamHandle: unexpected handle type \(handle.pointee.type)")
  }
}

/// Closes and frees a stream handle that never got an owner (failed open/accept).
func closeOrphanStream(_ stream: UnsafeMutablePointer<uv_stream_t>) {
  asHandle(stream).pointee.data = nil
  uv_close(asHandle(stream)) { handle in
    guard let handle else { return }
    deallocateStreamHandle(handle)
  }
}
