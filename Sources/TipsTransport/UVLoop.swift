// UVLoop: a private uv_loop_t plus the per-turn hook used for group commit.
//
// THREADING: everything in TipsTransport is single-threaded. A `UVLoop` and
// every object made from it (timers, signal watchers, streams, servers)
// must be used only on the thread that created the loop, which is also the
// thread that calls `run()`. Debug builds check this with `pthread_self()` and
// trap on misuse; release builds do not check.
import CLibUV
import Glibc

/// A libuv event loop (its own `uv_loop_t`, never the default loop).
///
/// Lifecycle: `init` → make handles → `run()` (repeatable) → `close()`.
/// Handles keep themselves alive until they are closed (individually, or all
/// at once by `close()`); a loop that is dropped without `close()` while
/// handles are open leaks them.
public final class UVLoop: EventLoop {
  /// The libuv loop; allocated here, freed after `uv_loop_close`.
  let uvLoop: UnsafeMutablePointer<uv_loop_t>
  /// Shared read buffer for every stream on this loop. Safe to share because
  /// libuv (on Unix) calls alloc → read → read_cb strictly in sequence on the
  /// loop thread, and `onData` may only borrow the bytes during the callback.
  let readBuffer: UnsafeMutableRawBufferPointer
  static let readBufferSize = 64 * 1024

  #if DEBUG
    private let ownerThread: pthread_t
  #endif
  private var isRunning = false
  /// `true` once `close()` has finished; the loop is unusable afterwards.
  public private(set) var isClosed = false

  /// Lazily created `uv_check_t` behind `afterEachTurn` and end-of-turn actions.
  private var turnHook: TurnHook?

  /// Creates a loop with its own `uv_loop_t`. Tests may create as many as they like.
  public init() throws(UVError) {
    let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
    loop.initialize(to: uv_loop_t())
    let rc = uv_loop_init(loop)
    if rc < 0 {
      loop.deallocate()
      throw UVError(code: rc, operation: "uv_loop_init")
    }
    uvLoop = loop
    readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
    #if DEBUG
      ownerThread = pthread_self()
    #endif
  }

  deinit {
    // Handles retain their loop, so reaching deinit means none of them is left
    // except the (non-retaining) turn hook; close() tidies that up.
    if !isClosed { close() }
  }

  /// Debug-only check that the caller is on the loop's thread.
  @inline(__always)
  func assertOnLoopThread(_ function: StaticString = #function) {
    #if DEBUG
      precondition(
        pthread_equal(pthread_self(), ownerThread) != 0,
        "TipsTransport: \(function) called off the event loop's thread")
    #endif
  }

  @inline(__always)
  func assertUsable(_ function: StaticString = #function) {
    assertOnLoopThread(function)
    precondition(!isClosed, "TipsTransport: \(function) called on a closed UVLoop")
  }

  /// Runs the loop until `stop()` is called or no active, referenced handles remain.
  /// May be called again after it returns. Not reentrant.
  public func run() {
    assertUsable()
    precondition(!isRunning, "UVLoop.run() is not reentrant")
    isRunning = true
    defer { isRunning = false }
    _ = uv_run(uvLoop, UV_RUN_DEFAULT)
  }

  /// Makes `run()` return at the end of the current iteration. Loop thread only.
  public func stop() {
    assertUsable()
    uv_stop(uvLoop)
  }

  /// The loop's cached clock in milliseconds (`uv_now`), updated at the start of each turn.
  public var now: UInt64 {
    assertUsable()
    return uv_now(uvLoop)
  }

  /// A new, stopped one-shot/repeating timer (a ``UVTimer``).
  public func makeTimer() -> any LoopTimer {
    assertUsable()
    return UVTimer(loop: self)
  }

  /// A poll of a descriptor the caller owns (a ``UVPoll``), not yet watching anything.
  public func makePoll(fileDescriptor: Int32) throws(TransportError) -> any LoopPoll {
    assertUsable()
    return try UVPoll(loop: self, fileDescriptor: fileDescriptor)
  }

  /// Resolves a host name on libuv's thread pool (`uv_getaddrinfo`); the loop never waits for DNS.
  public func resolve(host: String, _ completion: @escaping (Result<String, TransportError>) -> Void) {
    assertUsable()
    UVResolution.start(loop: self, host: host, completion: completion)
  }

  /// Calls `handler` on the loop thread whenever `signum` is delivered to the process.
  public func onSignal(_ signum: Int32, _ handler: @escaping () -> Void) throws(UVError) -> SignalWatcher {
    assertUsable()
    return try SignalWatcher(loop: self, signum: signum, handler: handler)
  }

  /// Registers `handler` to run once per loop iteration, after that iteration's
  /// I/O callbacks (all `onData` / `onConnection` / write completions of the
  /// turn) and before handles closed during the turn report `onClose`.
  ///
  /// Backed by one `uv_check_t`, which does not keep the loop alive. Handlers
  /// run in registration order and for the life of the loop. The server uses
  /// this for group commit: buffer the writes of a turn, commit once, reply.
  public func afterEachTurn(_ handler: @escaping () -> Void) {
    assertUsable()
    hook().handlers.append(handler)
  }

  /// Makes the `afterEachTurn` handlers run soon even if no I/O arrives: a uv_idle handle keeps the coming poll
  /// from blocking until the check phase has run (a timer callback runs before the poll, so without it the work it
  /// staged would wait for the next event).
  public func requestEndOfTurn() {
    assertUsable()
    hook().requestTurn()
  }

  /// Queues a one-shot action for the end of the current turn, after the
  /// `afterEachTurn` handlers (used to close a connection at EOF only after the
  /// replies produced in the same turn have been queued).
  func atEndOfTurn(_ action: @escaping () -> Void) {
    hook().deferred.append(action)
  }

  private func hook() -> TurnHook {
    if let turnHook { return turnHook }
    let made = TurnHook(loop: uvLoop)
    turnHook = made
    return made
  }

  /// Closes every remaining handle (timers, watchers, connections, servers…),
  /// runs the loop until their close callbacks have run, then `uv_loop_close`.
  /// Must not be called from inside `run()`. Idempotent.
  public func close() {
    assertOnLoopThread()
    guard !isClosed else { return }
    precondition(!isRunning, "UVLoop.close() must not be called from inside run()")
    turnHook = nil  // the handle itself is closed by the walk below
    var rounds = 0
    while true {
      // onClose handlers may create new handles, hence the loop.
      uv_walk(
        uvLoop,
        { handle, _ in
          guard let handle, uv_is_closing(handle) == 0, isOwned(handle), let data = handle.pointee.data else { return }
          let object = Unmanaged<AnyObject>.fromOpaque(data).takeUnretainedValue()
          (object as? any LoopHandleOwner)?.closeForLoopShutdown()
        }, nil)
      _ = uv_run(uvLoop, UV_RUN_DEFAULT)
      let rc = uv_loop_close(uvLoop)
      if rc == 0 { break }
      rounds += 1
      precondition(
        rounds < 1000, "UVLoop.close(): uv_loop_close keeps failing: \(UVError(code: rc, operation: "uv_loop_close"))")
    }
    uvLoop.deallocate()
    readBuffer.deallocate()
    isClosed = true
  }
}

/// Owner of the loop's `uv_check_t` (the end-of-turn hook) and of the `uv_idle_t` that keeps a poll from blocking
/// while an end of turn is requested. Deliberately holds no reference to the `UVLoop`, so an idle loop can still be
/// deinitialised.
final class TurnHook: LoopHandleOwner {
  let handle: UnsafeMutablePointer<uv_check_t>
  let idle: UnsafeMutablePointer<uv_idle_t>
  var handlers: [() -> Void] = []
  var deferred: [() -> Void] = []
  private var idleActive = false
  private var closing = false
  private var openHandles = 2

  init(loop: UnsafeMutablePointer<uv_loop_t>) {
    handle = .allocate(capacity: 1)
    handle.initialize(to: uv_check_t())
    idle = .allocate(capacity: 1)
    idle.initialize(to: uv_idle_t())
    mustSucceed(uv_check_init(loop, handle), "uv_check_init")
    mustSucceed(uv_idle_init(loop, idle), "uv_idle_init")
    retainOwner(self, in: asHandle(handle))
    retainOwner(self, in: asHandle(idle))
    mustSucceed(
      uv_check_start(handle) { h in
        guard let h, let hook = owner(of: asHandle(h), as: TurnHook.self) else { return }
        hook.fire()
      }, "uv_check_start")
    uv_unref(asHandle(handle))  // never keeps the loop alive by itself
    uv_unref(asHandle(idle))
  }

  /// Starts the idle handle (the coming poll will not block) until the next end of turn.
  func requestTurn() {
    guard !idleActive, !closing else { return }
    idleActive = true
    mustSucceed(uv_idle_start(idle) { _ in }, "uv_idle_start")
  }

  private func fire() {
    if idleActive {
      idleActive = false
      uv_idle_stop(idle)
    }
    for handler in handlers { handler() }
    while !deferred.isEmpty {
      let actions = deferred
      deferred = []
      for action in actions { action() }
    }
  }

  func closeForLoopShutdown() {
    guard !closing else { return }
    closing = true
    let closed: uv_close_cb = { h in
      guard let h, let hook = releaseOwner(of: h, as: TurnHook.self) else { return }
      hook.openHandles -= 1
      guard hook.openHandles == 0 else { return }
      hook.handlers = []
      hook.deferred = []
      hook.handle.deallocate()
      hook.idle.deallocate()
    }
    uv_close(asHandle(handle), closed)
    uv_close(asHandle(idle), closed)
  }
}
