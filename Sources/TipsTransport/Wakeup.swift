// Wakeup: a uv_async_t, the only thread-safe entry point into a loop.
import CLibUV
import Synchronization

/// Lets any thread schedule `handler` on the loop thread (`uv_async_t`).
///
/// `send()` may be called from any thread, any number of times; sends that
/// arrive before the handler runs are coalesced into one call. Sending after
/// `close()` is a harmless no-op. Everything else is loop-thread only.
/// An open wakeup keeps `run()` from returning unless `keepsLoopAlive = false`.
///
/// @unchecked Sendable: only `send()` is called off the loop thread, and it touches
/// the handle solely under `state`'s lock, which `close()` also takes before `uv_close`,
/// so the handle is never used after it starts closing; `handler` and the rest are
/// touched only on the loop thread.
public final class Wakeup: LoopHandleOwner, @unchecked Sendable {
  let loop: EventLoop
  private let handle: UnsafeMutablePointer<uv_async_t>
  private var handler: (() -> Void)?
  /// `true` once closed; guards `handle` against late senders.
  private let state = Mutex<Bool>(false)
  private var closeStarted = false

  init(loop: EventLoop, handler: @escaping () -> Void) throws(UVError) {
    self.loop = loop
    self.handler = handler
    handle = .allocate(capacity: 1)
    handle.initialize(to: uv_async_t())
    let rc = uv_async_init(loop.uvLoop, handle) { h in
      guard let h, let wakeup = owner(of: asHandle(h), as: Wakeup.self) else { return }
      wakeup.handler?()
    }
    if rc < 0 {
      handle.deallocate()
      throw UVError(code: rc, operation: "uv_async_init")
    }
    retainOwner(self, in: asHandle(handle))
  }

  /// Wakes the loop and runs the handler there soon. Thread-safe; never blocks on the loop.
  public func send() {
    state.withLock { closed in
      guard !closed else { return }
      _ = uv_async_send(handle)  // only fails for a closing handle, excluded by the lock
    }
  }

  /// Whether the wakeup keeps `run()` from returning (default `true`).
  public var keepsLoopAlive: Bool {
    get { isReferenced(asHandle(handle), closed: closeStarted, on: loop) }
    set { setReferenced(asHandle(handle), newValue, closed: closeStarted, on: loop) }
  }

  /// Closes the handle; later `send()`s are ignored. Loop thread only. Idempotent.
  public func close() {
    loop.assertOnLoopThread()
    guard !closeStarted else { return }
    closeStarted = true
    state.withLock { closed in
      closed = true
      uv_close(asHandle(handle)) { h in
        guard let h, let wakeup = releaseOwner(of: h, as: Wakeup.self) else { return }
        wakeup.handler = nil
        wakeup.handle.deallocate()
      }
    }
  }

  func closeForLoopShutdown() { close() }
}
