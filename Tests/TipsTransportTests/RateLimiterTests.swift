import Testing
import TipsTransport

@Suite struct RateLimiterTests {
  @Test func aBurstThenTheRateAndAccountsApart() {
    var limiter = RateLimiter(rate: 10, burst: 5)
    for _ in 0..<5 { #expect(limiter.take("alice", now: 100) == nil) }
    let wait = limiter.take("alice", now: 100)
    #expect(wait != nil && abs((wait ?? 0) - 0.1) < 1e-9)
    // Another account is not slowed by alice's.
    #expect(limiter.take("bob", now: 100) == nil)
    // One token back after 0.1 s, not two.
    #expect(limiter.take("alice", now: 100.1) == nil)
    #expect(limiter.take("alice", now: 100.1) != nil)
    // Refilled buckets are forgotten (bob's, 4 + 2 tokens by now); busy ones are kept (alice's).
    limiter.forgetFull(now: 100.2)
    #expect(limiter.tracked == 1)
    limiter.forgetFull(now: 101)
    #expect(limiter.tracked == 0)
    #expect(RateLimiter(rate: 100).burst == 200 && RateLimiter(rate: 0.1).burst == 1)
    // retryAfter peeks without taking: an empty bucket's wait, then none once refilled.
    var peek = RateLimiter(rate: 10, burst: 1)
    #expect(peek.retryAfter("carol", now: 0) == nil && peek.take("carol", now: 0) == nil)
    #expect(abs((peek.retryAfter("carol", now: 0.05) ?? 0) - 0.05) < 1e-9)
    #expect(abs((peek.retryAfter("carol", now: 0.05) ?? 0) - 0.05) < 1e-9)
    #expect(peek.retryAfter("carol", now: 0.1) == nil && peek.isTracking("carol") && !peek.isTracking("dave"))
  }

  /// A request that costs many tokens (a hosted node's `sync/push`: one per operation) is taken from a bucket at
  /// least half full and leaves it in debt: the average stays the rate whatever each request costs.
  @Test func aCostlyRequestLeavesTheBucketInDebt() {
    var limiter = RateLimiter(rate: 50)
    // The request's own token, then its 499 other operations.
    #expect(limiter.take("alice", now: 0) == nil)
    #expect(limiter.take("alice", now: 0, cost: 499) == nil)
    // 100 - 500 = -400 tokens: 8 s until one is back, and not before.
    let wait = limiter.take("alice", now: 0)
    #expect(wait != nil && abs((wait ?? 0) - 8.02) < 1e-6)
    #expect(limiter.take("alice", now: 7.9) != nil)
    #expect(limiter.take("alice", now: 8.1) == nil)
    // A costly request needs half the burst: refused from a bucket with less, and then nothing is taken.
    var low = RateLimiter(rate: 10)
    for _ in 0..<15 { #expect(low.take("bob", now: 0) == nil) }
    #expect(low.take("bob", now: 0, cost: 50) != nil)
    #expect(low.take("bob", now: 0, cost: 5) == nil)
    // That took the 5 left; one more waits 0.1 s for its token, as before.
    let next = low.take("bob", now: 0)
    #expect(next != nil && abs((next ?? 0) - 0.1) < 1e-9)
  }
}
