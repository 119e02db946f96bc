// UVTimer: a uv_timer_t.
import CLibUV

/// A timer on an `UVLoop` (`uv_timer_t`). Loop thread only.
///
/// Timers due in the same turn fire in deadline order (ties: start order).
/// The timer stays alive until `close()` (or `UVLoop.close()`), even if
/// you drop your reference; closing releases the handler.
public final class UVTimer: LoopTimer, LoopHandleOwner {
  let loop: UVLoop
  private let handle: UnsafeMutablePointer<uv_timer_t>
  private var handler: (() -> Void)?
  /// `true` once `close()` has been called.
  public private(set) var isClosed = false

  init(loop: UVLoop) {
    self.loop = loop
    handle = .allocate(capacity: 1)
    handle.initialize(to: uv_timer_t())
    mustSucceed(uv_timer_init(loop.uvLoop, handle), "uv_timer_init")
    retainOwner(self, in: asHandle(handle))
  }

  /// (Re)starts the timer: `handler` runs after `afterMilliseconds` (measured
  /// from the loop's cached `now`) and then every `repeatEvery` ms if non-zero.
  /// Replaces any previous schedule and handler.
  public func start(afterMilliseconds: UInt64, repeatEvery: UInt64, _ handler: @escaping () -> Void) {
    loop.assertOnLoopThread()
    precondition(!isClosed, "UVTimer.start on a closed timer")
    self.handler = handler
    // libuv counts from the loop's cached "now", taken when the turn began: after a long turn (a slow commit, a
    // busy machine) a timer armed without this would fire early by the turn's length.
    uv_update_time(loop.uvLoop)
    mustSucceed(
      uv_timer_start(
        handle,
        { h in
          guard let h, let timer = owner(of: asHandle(h), as: UVTimer.self) else { return }
          timer.handler?()
        }, afterMilliseconds, repeatEvery), "uv_timer_start")
  }

  /// Stops the timer; it can be started again.
  public func stop() {
    loop.assertOnLoopThread()
    guard !isClosed else { return }
    mustSucceed(uv_timer_stop(handle), "uv_timer_stop")
  }

  /// Whether the timer is scheduled.
  public var isActive: Bool {
    loop.assertOnLoopThread()
    return !isClosed && uv_is_active(asHandle(handle)) != 0
  }

  /// Whether an active timer keeps `run()` from returning (default `true`).
  /// Set to `false` for watchdogs and housekeeping timers.
  public var keepsLoopAlive: Bool {
    get { isReferenced(asHandle(handle), closed: isClosed, on: loop) }
    set { setReferenced(asHandle(handle), newValue, closed: isClosed, on: loop) }
  }

  /// Stops the timer and releases it. Idempotent.
  public func close() {
    loop.assertOnLoopThread()
    guard !isClosed else { return }
    isClosed = true
    uv_close(asHandle(handle)) { h in
      guard let h, let timer = releaseOwner(of: h, as: UVTimer.self) else { return }
      timer.handler = nil
      timer.handle.deallocate()
    }
  }

  func closeForLoopShutdown() { close() }
}
