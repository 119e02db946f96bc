import Glibc

/// A clock whose time only moves when told to: tests and `tipsd serve --clock virtual` drive it.
///
/// `@unchecked Sendable` because the engine is owned by one thread (the server's loop thread) and so is its
/// clock: the clock is created, advanced and read on that thread only. It is `Sendable` so it can be handed to
/// that thread at start-up; it does no locking and must not be shared between threads that run concurrently.
public final class VirtualClock: EngineClock, @unchecked Sendable {
  private var current: Timestamp

  /// A clock reading `now` (default: the epoch).
  public init(now: Timestamp = 0) {
    current = now
  }

  public func now() -> Timestamp { current }

  /// Moves time forward by `seconds` (a negative amount moves it back).
  public func advance(by seconds: Double) {
    current += seconds
  }

  /// Sets the current instant.
  public func set(_ instant: Timestamp) {
    current = instant
  }
}

/// The wall clock (`CLOCK_REALTIME`), in seconds since the Unix epoch.
public final class SystemClock: EngineClock {
  public init() {}

  public func now() -> Timestamp {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1_000_000_000
  }
}

/// Another clock, read through — except while held at an instant, when it reads that instant. Hosted mode loads an
/// account as of its last instant (the state then), releases the clock and lets time move to now, so what changed
/// with time in between is applied at its own instants (``Engine/advanceTimeInSteps()``).
///
/// `@unchecked Sendable` for the same reason as ``VirtualClock``: one owner thread.
public final class HeldClock: EngineClock, @unchecked Sendable {
  private let base: any EngineClock
  private var held: Timestamp?

  public init(_ base: any EngineClock) {
    self.base = base
  }

  public func now() -> Timestamp { held ?? base.now() }

  /// Reads `instant` until ``release()`` (nil, or an instant not before the clock's now: reads through).
  public func hold(at instant: Timestamp?) {
    guard let instant, instant < base.now() else { return }
    held = instant
  }

  /// Reads the clock it wraps again.
  public func release() { held = nil }
}
