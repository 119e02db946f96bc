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
}
