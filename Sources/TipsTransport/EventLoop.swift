// The small abstractions the server is written against: a byte stream, a timer, a file-descriptor poll and an event
// loop with an end-of-turn hook. `UVLoop`, `UVStream`, `UVTimer` and `UVPoll` implement them on libuv for production;
// `TipsTestSupport.EmbeddedEventLoop` implements them in memory with manual time, so server tests run in-process,
// deterministically, with no sockets and no sleeps (the way `NIOEmbedded.EmbeddedEventLoop` serves swift-nio).

/// A peer's credentials (`SO_PEERCRED`).
public struct PeerCredentials: Sendable, Equatable {
  public var pid: Int32
  public var uid: UInt32
  public var gid: UInt32

  public init(pid: Int32, uid: UInt32, gid: UInt32) {
    self.pid = pid
    self.uid = uid
    self.gid = gid
  }
}

/// A bidirectional byte stream serving one client. Loop thread only.
///
/// Reading: after `startReading()`, bytes arrive in `onData`, valid only during the call. `stopReading()` applies
/// back-pressure. Writing: `write` hands bytes over (copied); `pendingWriteBytes` counts those not yet taken by the
/// peer, so callers can bound what they produce. Closing: `onClose` fires exactly once, after which the stream is
/// inert; `close(after: true)` first flushes what was written.
public protocol ByteStream: AnyObject {
  /// Process-unique identifier (for logs and maps).
  var id: UInt64 { get }
  var onData: ((UnsafeRawBufferPointer) -> Void)? { get set }
  var onClose: ((CloseReason) -> Void)? { get set }
  /// Bytes written and not yet taken by the peer.
  var pendingWriteBytes: Int { get }
  /// True once closing has begun; writes are then ignored.
  var isClosed: Bool { get }
  /// The peer's credentials on a Unix socket; nil elsewhere or when they cannot be read.
  var peerCredentials: PeerCredentials? { get }
  func startReading()
  func stopReading()
  /// Writes `bytes`; false (dropping them) when closing.
  @discardableResult func write(_ bytes: [UInt8]) -> Bool
  /// Writes several messages at once, each as ``write(_:)`` would: message i is `buffer[ends[i-1]..<ends[i] - 1]`
  /// (each followed by one delimiter byte, left out; the first starts at 0).
  @discardableResult func write(messages buffer: [UInt8], ends: [Int]) -> Bool
  /// Closes: with `flushing`, after the pending writes are out; `reason` is for logs
  /// (``ByteStream/daemonStopping`` tells a WebSocket to say 1001, going away).
  func close(after flushing: Bool, reason: String)
  /// Whether each `onData` is one whole message and each `write` one message (WebSocket), rather than a byte
  /// stream that needs framing.
  var deliversMessages: Bool { get }
  /// For a stream that delivers messages: which message is arriving in pieces now (a number that changes with each
  /// new one), nil when none is — so a server can close a connection whose message stays incomplete.
  var partialMessage: UInt64? { get }
}

/// A one-shot or repeating timer. Loop thread only.
public protocol LoopTimer: AnyObject {
  /// (Re)starts: `handler` runs after `afterMilliseconds`, then every `repeatEvery` ms if non-zero.
  func start(afterMilliseconds: UInt64, repeatEvery: UInt64, _ handler: @escaping () -> Void)
  func stop()
  /// Stops and releases the timer for good.
  func close()
  /// Whether an active timer keeps the loop running (false for housekeeping).
  var keepsLoopAlive: Bool { get set }
}

extension LoopTimer {
  /// A one-shot start.
  public func start(afterMilliseconds: UInt64, _ handler: @escaping () -> Void) {
    start(afterMilliseconds: afterMilliseconds, repeatEvery: 0, handler)
  }
}

extension ByteStream {
  public var deliversMessages: Bool { false }
  public var partialMessage: UInt64? { nil }

  @discardableResult
  public func write(messages buffer: [UInt8], ends: [Int]) -> Bool {
    var start = 0
    for end in ends {
      guard write(Array(buffer[start..<end - 1])) else { return false }
      start = end
    }
    return true
  }

  /// The close reason of a daemon that is stopping.
  public static var daemonStopping: String { "daemon stopping" }
  /// The same, from an instance.
  public var daemonStoppingReason: String { Self.daemonStopping }

  /// Closes with the generic reason "closed by server".
  public func close(after flushing: Bool) { close(after: flushing, reason: "closed by server") }
}

/// What a ``LoopPoll`` reports (and what it is asked to watch for).
public struct PollEvents: OptionSet, Sendable, Hashable {
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }
  /// The descriptor can be read without blocking (or has hung up: the next read says so).
  public static let readable = PollEvents(rawValue: 1)
  /// The descriptor can be written without blocking.
  public static let writable = PollEvents(rawValue: 2)
}

/// Readiness of a file descriptor someone else reads and writes (libpq's socket), on the loop. Loop thread only.
///
/// The poll does not own the descriptor: close the poll *before* whoever owns the descriptor closes it (a
/// descriptor must not be closed while it is watched). `onEvents` runs on the loop thread whenever one of the
/// watched conditions holds (level-triggered: again next turn if nothing consumed it). An error on the descriptor is
/// reported as both readable and writable, so the owner's next read or write finds it.
public protocol LoopPoll: AnyObject {
  /// The descriptor watched.
  var fileDescriptor: Int32 { get }
  /// Watches for `events` (replacing what was watched before); an empty set stops watching.
  func watch(_ events: PollEvents, _ onEvents: @escaping (PollEvents) -> Void)
  /// Stops watching and releases the poll for good (the descriptor is untouched). Idempotent.
  func close()
}

/// What the server needs of an event loop: a millisecond clock, timers, and the end-of-turn hook that group commit
/// hangs on. Loop thread only.
public protocol EventLoop: AnyObject {
  /// The loop's clock in milliseconds (monotonic, cached per turn).
  var now: UInt64 { get }
  /// A new, stopped timer.
  func makeTimer() -> any LoopTimer
  /// A poll of a descriptor the caller owns (a database client's socket), not yet watching anything.
  func makePoll(fileDescriptor: Int32) throws(TransportError) -> any LoopPoll
  /// Resolves a host name to one numeric address without blocking the loop (`completion` runs on the loop thread,
  /// always — with a failure if the loop closes first).
  func resolve(host: String, _ completion: @escaping (Result<String, TransportError>) -> Void)
  /// Runs `handler` once per turn, after the turn's I/O callbacks, for the life of the loop.
  func afterEachTurn(_ handler: @escaping () -> Void)
  /// Makes the end-of-turn handlers run soon even if no I/O arrives: work staged by a timer or signal callback
  /// must not wait for the next event. Cheap when already requested.
  func requestEndOfTurn()
  /// Makes the loop's run return at the end of this turn.
  func stop()
}
