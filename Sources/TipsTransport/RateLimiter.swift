/// Token buckets by key, refilled at `rate` tokens a second up to `burst`: a hosted node's per-account request rate
/// (`--account-rate`) and a daemon's per-peer connection rate (``ConnectionLimiter``). Pure (the caller passes the
/// time) and bounded: buckets that are full again are forgotten.
public struct RateLimiter: Sendable {
  public let rate: Double
  public let burst: Double
  private var buckets: [String: Bucket] = [:]

  struct Bucket {
    var tokens: Double
    var at: Double

    /// ``RateLimiter/take(_:now:cost:)`` on this bucket.
    mutating func take(now: Double, cost: Double, rate: Double, burst: Double) -> Double? {
      tokens = min(burst, tokens + max(0, now - at) * rate)
      at = now
      let needed = min(max(0, cost), max(1, burst / 2))
      // (A hair of tolerance: 0.1 s at 10/s refills 0.9999999999999943 tokens in floating point.)
      guard tokens >= needed - 1e-9 else { return (needed - tokens) / rate }
      tokens = cost <= 1 ? max(0, tokens - cost) : tokens - cost
      return nil
    }
  }

  /// `rate` requests a second on average, bursts of up to `burst` (default: two seconds' worth, at least 1).
  public init(rate: Double, burst: Double? = nil) {
    precondition(rate > 0)
    self.rate = rate
    self.burst = max(1, burst ?? rate * 2)
  }

  /// Takes `cost` tokens (default one) for `account` at `now` (seconds); nil when allowed, else the seconds until
  /// it would be. A cost above half the burst is allowed from a bucket at least half full and leaves it in debt
  /// (refilled before anything more is allowed), so the average stays `rate` tokens a second whatever each costs.
  public mutating func take(_ account: String, now: Double, cost: Double = 1) -> Double? {
    // The bucket is updated in place: one hash of the key a request, not a lookup and a store.
    let (rate, burst) = (self.rate, self.burst)
    return buckets[account, default: Bucket(tokens: burst, at: now)].take(
      now: now, cost: cost, rate: rate, burst: burst)
  }

  /// Forgets buckets that have refilled completely by `now` (the limiter's memory stays proportional to the accounts
  /// active in the last `burst / rate` seconds).
  public mutating func forgetFull(now: Double) {
    buckets = buckets.filter { _, bucket in bucket.tokens + max(0, now - bucket.at) * rate < burst }
  }

  /// The seconds until `key` may take a token, or nil if it may now. Takes nothing.
  public func retryAfter(_ key: String, now: Double) -> Double? {
    guard let bucket = buckets[key] else { return nil }
    let tokens = min(burst, bucket.tokens + max(0, now - bucket.at) * rate)
    return tokens >= 1 - 1e-9 ? nil : (1 - tokens) / rate
  }

  /// Keys with a bucket now.
  public var tracked: Int { buckets.count }

  /// Whether `key` has a bucket now.
  public func isTracking(_ key: String) -> Bool { buckets[key] != nil }
}
