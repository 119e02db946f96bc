// SignalWatcher: a uv_signal_t.
import CLibUV

/// Runs a handler on the loop thread when a signal arrives (`uv_signal_t`).
/// Loop thread only. Like every handle it stays alive until `close()`.
///
/// While active the watcher keeps `run()` from returning unless
/// `keepsLoopAlive` is set to `false` (handy for SIGTERM/SIGINT watchers of a
/// daemon that should exit when its last client goes away).
public final class SignalWatcher: LoopHandleOwner {
  let loop: UVLoop
  private let handle: UnsafeMutablePointer<uv_signal_t>
  private var handler: (() -> Void)?
  /// The watched signal number.
  public let signum: Int32
  /// `true` once `close()` has been called.
  public private(set) var isClosed = false

  init(loop: UVLoop, signum: Int32, handler: @escaping () -> Void) throws(UVError) {
    self.loop = loop
    self.signum = signum
    self.handler = handler
    handle = .allocate(capacity: 1)
    handle.initialize(to: uv_signal_t())
    let rc = uv_signal_init(loop.uvLoop, handle)
    if rc < 0 {
      handle.deallocate()  // never registered with the loop
      throw UVError(code: rc, operation: "uv_signal_init")
    }
    retainOwner(self, in: asHandle(handle))
    do {
      try check(
        uv_signal_start(
          handle,
          { h, _ in
            guard let h, let watcher = owner(of: asHandle(h), as: SignalWatcher.self) else { return }
            watcher.handler?()
          }, signum), "uv_signal_start(\(signum))")
    } catch {
      close()
      throw error
    }
  }

  /// Whether the active watcher keeps `run()` from returning (default `true`).
  public var keepsLoopAlive: Bool {
    get { isReferenced(asHandle(handle), closed: isClosed, on: loop) }
    set { setReferenced(asHandle(handle), newValue, closed: isClosed, on: loop) }
  }

  /// Stops watching and releases the handler. Idempotent.
  public func close() {
    loop.assertOnLoopThread()
    guard !isClosed else { return }
    isClosed = true
    uv_close(asHandle(handle)) { h in
      guard let h, let watcher = releaseOwner(of: h, as: SignalWatcher.self) else { return }
      watcher.handler = nil
      watcher.handle.deallocate()
    }
  }

  func closeForLoopShutdown() { close() }
}
