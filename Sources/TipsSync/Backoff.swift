/// The one backoff (issue #44) of every link and retry: the wait before the next attempt, `first` seconds after the
/// first failure, doubling with each failure in a row up to `cap`; a success starts it over. Used by PostgreSQL's
/// links (``PGLink``'s connections, the sync pump) and a hosted node's pull retries.
public struct Backoff: Sendable, Equatable {
  public let first: Double
  public let cap: Double
  /// Failures in a row.
  public private(set) var failures = 0

  /// A `first` below a millisecond waits a millisecond; a `cap` below `first` is `first`.
  public init(first: Double = 0.1, cap: Double) {
    self.first = max(first, 0.001)
    self.cap = max(cap, self.first)
  }

  /// The wait after the next failure.
  public var next: Double {
    // 2^failures overflows nothing: past 60 doublings every finite cap is reached.
    failures >= 60 ? cap : min(cap, first * Double(UInt64(1) << UInt64(failures)))
  }

  /// An attempt failed: the wait before the next one.
  public mutating func failed() -> Double {
    let delay = next
    failures += 1
    return delay
  }

  /// An attempt succeeded: the next failure waits `first` again.
  public mutating func succeeded() { failures = 0 }
}
