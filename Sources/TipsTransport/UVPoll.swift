// UVPoll: a uv_poll_t on a descriptor someone else owns (libpq's socket).
import CLibUV

/// Readiness of a descriptor on an `UVLoop` (`uv_poll_t`). Loop thread only.
///
/// Ownership, as for ``UVTimer``: the handle is allocated here, its `data` holds a +1 reference to this object
/// (`retainOwner`), and both are released only in the close callback — so the poll stays alive until ``close()`` (or
/// `UVLoop.close()`), even if its owner drops it. The descriptor is *not* owned: its owner (a `PGconn`) must call
/// ``close()`` before closing the descriptor, as libuv requires (`uv_close` stops watching at once; the memory is
/// freed a turn later).
public final class UVPoll: LoopPoll, LoopHandleOwner {
  let loop: UVLoop
  public let fileDescriptor: Int32
  private let handle: UnsafeMutablePointer<uv_poll_t>
  private var handler: ((PollEvents) -> Void)?
  private var watching: PollEvents = []
  /// `true` once `close()` has been called.
  public private(set) var isClosed = false

  init(loop: UVLoop, fileDescriptor: Int32) throws(TransportError) {
    self.loop = loop
    self.fileDescriptor = fileDescriptor
    handle = .allocate(capacity: 1)
    handle.initialize(to: uv_poll_t())
    do {
      // uv_poll_init_socket: the descriptor is a socket (libpq's), which is what libuv wants to be told on Unix too.
      try check(uv_poll_init_socket(loop.uvLoop, handle, fileDescriptor), "uv_poll_init_socket")
    } catch {
      handle.deallocate()
      throw TransportError("cannot watch descriptor \(fileDescriptor)", cause: error)
    }
    retainOwner(self, in: asHandle(handle))
  }

  public func watch(_ events: PollEvents, _ onEvents: @escaping (PollEvents) -> Void) {
    loop.assertOnLoopThread()
    precondition(!isClosed, "UVPoll.watch on a closed poll")
    handler = onEvents
    guard events != watching else { return }
    watching = events
    if events.isEmpty {
      mustSucceed(uv_poll_stop(handle), "uv_poll_stop")
      return
    }
    var flags: Int32 = 0
    if events.contains(.readable) { flags |= Int32(UV_READABLE.rawValue) }
    if events.contains(.writable) { flags |= Int32(UV_WRITABLE.rawValue) }
    mustSucceed(
      uv_poll_start(handle, flags) { h, status, events in
        guard let h, let poll = owner(of: asHandle(h), as: UVPoll.self), !poll.isClosed else { return }
        var ready: PollEvents = []
        if status < 0 {
          // An error on the descriptor (EBADF aside, which is a bug): let the owner's read or write find it.
          ready = [.readable, .writable]
        } else {
          if events & Int32(UV_READABLE.rawValue) != 0 { ready.insert(.readable) }
          if events & Int32(UV_WRITABLE.rawValue) != 0 { ready.insert(.writable) }
          if events & Int32(UV_DISCONNECT.rawValue) != 0 { ready.insert(.readable) }
        }
        poll.handler?(ready)
      }, "uv_poll_start")
  }

  /// Whether an active poll keeps `run()` from returning (default `true`).
  public var keepsLoopAlive: Bool {
    get { isReferenced(asHandle(handle), closed: isClosed, on: loop) }
    set { setReferenced(asHandle(handle), newValue, closed: isClosed, on: loop) }
  }

  public func close() {
    loop.assertOnLoopThread()
    guard !isClosed else { return }
    isClosed = true
    handler = nil
    uv_close(asHandle(handle)) { h in
      guard let h, let poll = releaseOwner(of: h, as: UVPoll.self) else { return }
      poll.handle.deallocate()
    }
  }

  func closeForLoopShutdown() { close() }
}
