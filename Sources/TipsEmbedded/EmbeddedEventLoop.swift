public import TipsEngine
public import TipsTransport

#if canImport(Glibc)
  import Glibc
#endif

/// An in-memory ``EventLoop`` with manual time, for deterministic in-process tests of the server (the role
/// `NIOEmbedded.EmbeddedEventLoop` plays for swift-nio).
///
/// Nothing happens until the test says so: ``run()`` runs turns until there is nothing left to do *now* (bytes sent
/// by ``EmbeddedStream`` peers, timers due at the current time, requested ends of turn); ``advance(by:)`` moves time
/// forward, firing each timer at its deadline in order, with the turns it causes. A turn is what a libuv iteration
/// is: due timers, then I/O (deliveries and peer closes), then the `afterEachTurn` handlers, then deferred closes.
/// No threads, no sockets, no sleeping: a test that passes here passes on any machine, however busy.
public final class EmbeddedEventLoop: EventLoop {
  /// Milliseconds since the loop was made.
  public private(set) var now: UInt64 = 0
  private var timers: [EmbeddedTimer] = []
  private var polls: [EmbeddedPoll] = []
  private var turnHandlers: [() -> Void] = []
  private var io: [() -> Void] = []
  private var endOfTurnActions: [() -> Void] = []
  private var endOfTurnRequested = false
  /// Whether ``stop()`` was called (the server stops its loop when it finishes).
  public private(set) var isStopped = false
  /// Turns run so far.
  public private(set) var turns = 0
  private var nextTimerSerial = 0

  public init() {}

  // MARK: EventLoop

  public func makeTimer() -> any LoopTimer {
    let timer = EmbeddedTimer(loop: self)
    timers.append(timer)
    return timer
  }

  /// A poll checked with `poll(2)` (no waiting) at every turn: a real descriptor (a database socket) works in
  /// process, and a ready one counts as work for ``run()``.
  public func makePoll(fileDescriptor: Int32) throws(TransportError) -> any LoopPoll {
    let poll = EmbeddedPoll(loop: self, fileDescriptor: fileDescriptor)
    polls.append(poll)
    return poll
  }

  /// Resolves with the system's resolver at once (tests only name hosts such as `localhost`); the completion runs in
  /// the next turn, as the loop's own would.
  public func resolve(host: String, _ completion: @escaping (Result<String, TransportError>) -> Void) {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    var result: UnsafeMutablePointer<addrinfo>?
    var answer: Result<String, TransportError> = .failure(TransportError("cannot resolve \(host)"))
    if getaddrinfo(host, nil, &hints, &result) == 0, let result {
      var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
      if getnameinfo(
        result.pointee.ai_addr, result.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
        == 0
      {
        answer = .success(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
      }
      freeaddrinfo(result)
    }
    scheduleIO { completion(answer) }
  }

  public func afterEachTurn(_ handler: @escaping () -> Void) { turnHandlers.append(handler) }

  public func requestEndOfTurn() { endOfTurnRequested = true }

  public func stop() { isStopped = true }

  // MARK: Driving

  /// Runs turns until nothing is left to do at the current time. Guards against a livelock (a turn that always
  /// schedules another) by giving up after `maxTurns`.
  public func run(maxTurns: Int = 100_000) {
    var count = 0
    while hasWorkNow {
      runTurn()
      count += 1
      precondition(count < maxTurns, "EmbeddedEventLoop.run: still busy after \(maxTurns) turns (a livelock?)")
    }
  }

  /// Moves time forward by `milliseconds`, stopping at each timer deadline on the way to fire it (and run the turns
  /// it causes), then at the target time.
  public func advance(by milliseconds: UInt64) {
    let target = now + milliseconds
    run()
    while let next = nextDeadline, next <= target {
      now = max(now, next)
      run()
    }
    now = target
    run()
  }

  /// Seconds version of ``advance(by:)``.
  public func advance(seconds: Double) { advance(by: UInt64((seconds * 1000).rounded())) }

  private var hasWorkNow: Bool {
    !io.isEmpty || endOfTurnRequested || !endOfTurnActions.isEmpty || timers.contains { $0.due(at: now) }
      || polls.contains { !$0.ready().isEmpty }
  }

  private var nextDeadline: UInt64? {
    timers.compactMap { $0.isActive ? $0.deadline : nil }.min()
  }

  private func runTurn() {
    turns += 1
    // Timers due now, in deadline order (ties: start order), as libuv runs them.
    let due = timers.filter { $0.due(at: now) }.sorted { ($0.deadline, $0.serial) < ($1.deadline, $1.serial) }
    for timer in due where timer.due(at: now) { timer.fire() }
    // I/O: what peers sent and did, in order; then descriptors that are ready.
    let events = io
    io.removeAll()
    for event in events { event() }
    for poll in polls {
      let ready = poll.ready()
      if !ready.isEmpty { poll.handler?(ready) }
    }
    endOfTurnRequested = false
    for handler in turnHandlers { handler() }
    while !endOfTurnActions.isEmpty {
      let actions = endOfTurnActions
      endOfTurnActions.removeAll()
      for action in actions { action() }
    }
  }

  // MARK: For streams and timers

  func scheduleIO(_ event: @escaping () -> Void) { io.append(event) }
  func atEndOfTurn(_ action: @escaping () -> Void) { endOfTurnActions.append(action) }
  func remove(_ timer: EmbeddedTimer) { timers.removeAll { $0 === timer } }
  func remove(_ poll: EmbeddedPoll) { polls.removeAll { $0 === poll } }
  func serial() -> Int {
    nextTimerSerial += 1
    return nextTimerSerial
  }
}

/// A timer on an ``EmbeddedEventLoop``.
final class EmbeddedTimer: LoopTimer {
  unowned let loop: EmbeddedEventLoop
  private(set) var deadline: UInt64 = 0
  private(set) var serial = 0
  private var interval: UInt64 = 0
  private var handler: (() -> Void)?
  private(set) var isActive = false
  var keepsLoopAlive = true

  init(loop: EmbeddedEventLoop) { self.loop = loop }

  func start(afterMilliseconds: UInt64, repeatEvery: UInt64, _ handler: @escaping () -> Void) {
    deadline = loop.now + afterMilliseconds
    interval = repeatEvery
    serial = loop.serial()
    self.handler = handler
    isActive = true
  }

  func stop() { isActive = false }

  func close() {
    isActive = false
    handler = nil
    loop.remove(self)
  }

  func due(at now: UInt64) -> Bool { isActive && deadline <= now }

  func fire() {
    if interval > 0 {
      deadline += interval
      serial = loop.serial()
    } else {
      isActive = false
    }
    handler?()
  }
}

/// A poll on an ``EmbeddedEventLoop``: readiness is asked of the kernel with a zero timeout at each turn.
final class EmbeddedPoll: LoopPoll {
  unowned let loop: EmbeddedEventLoop
  let fileDescriptor: Int32
  private(set) var watching: PollEvents = []
  var handler: ((PollEvents) -> Void)?

  init(loop: EmbeddedEventLoop, fileDescriptor: Int32) {
    self.loop = loop
    self.fileDescriptor = fileDescriptor
  }

  func watch(_ events: PollEvents, _ onEvents: @escaping (PollEvents) -> Void) {
    watching = events
    handler = onEvents
  }

  /// What of the watched conditions holds now.
  func ready() -> PollEvents {
    guard !watching.isEmpty else { return [] }
    var request = pollfd(fd: fileDescriptor, events: 0, revents: 0)
    if watching.contains(.readable) { request.events |= Int16(POLLIN) }
    if watching.contains(.writable) { request.events |= Int16(POLLOUT) }
    guard Glibc.poll(&request, 1, 0) > 0 else { return [] }
    // A hang-up or an error is reported as whatever is watched, so the owner's next read or write finds it.
    if request.revents & Int16(POLLHUP | POLLERR) != 0 { return watching }
    var ready: PollEvents = []
    if request.revents & Int16(POLLIN) != 0 { ready.insert(.readable) }
    if request.revents & Int16(POLLOUT) != 0 { ready.insert(.writable) }
    return ready.intersection(watching)
  }

  func close() {
    watching = []
    handler = nil
    loop.remove(self)
  }
}

/// An engine clock that reads an ``EmbeddedEventLoop``'s manual time: seconds since the epoch, from `start` plus the
/// loop's milliseconds — so the server's time-driven timers and the engine agree, as they do on the system clock.
///
/// `@unchecked Sendable`: read only on the test's thread, which also drives the loop.
public final class EmbeddedClock: EngineClock, @unchecked Sendable {
  private unowned let loop: EmbeddedEventLoop
  public let start: Double

  public init(loop: EmbeddedEventLoop, start: Double = 1_700_000_000) {
    self.loop = loop
    self.start = start
  }

  public func now() -> Timestamp { start + Double(loop.now) / 1000 }
}
