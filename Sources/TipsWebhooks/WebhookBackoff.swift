/// When a failed delivery is tried again: exponential backoff with jitter. The wait after the n-th failure in a row
/// is `first · 2^(n-1)`, capped at `cap`, times a random factor in [0.5, 1] (so retries of many endpoints spread out
/// and the first retry comes within `first` seconds, 5 by default). An endpoint whose oldest undelivered event has
/// waited `giveUpAfter` (24 h by default) is disabled.
public struct WebhookBackoff: Sendable, Equatable {
  public var first: Double
  public var cap: Double
  public var giveUpAfter: Double

  public init(first: Double = 5, cap: Double = 3_600, giveUpAfter: Double = 86_400) {
    self.first = max(first, 0.001)
    self.cap = max(cap, self.first)
    self.giveUpAfter = giveUpAfter
  }

  /// The wait after the `failures`-th failure in a row (1: the first), with `unit` in [0, 1] drawing the jitter.
  public func delay(afterFailures failures: Int, unit: Double) -> Double {
    let doublings = max(0, min(failures - 1, 60))
    let base = min(cap, first * Double(UInt64(1) << UInt64(doublings)))
    return base * (0.5 + 0.5 * min(max(unit, 0), 1))
  }

  /// The wait after the `failures`-th failure in a row, with the system's random jitter.
  public func delay(afterFailures failures: Int) -> Double {
    delay(afterFailures: failures, unit: Double.random(in: 0...1))
  }

  /// Whether an endpoint whose oldest undelivered event was created `age` seconds ago is given up on.
  public func givesUp(age: Double) -> Bool { age >= giveUpAfter }
}
