import Testing

@testable import TipsHosted

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
  }
}

@Suite struct DeadlineQueueTests {
  @Test func earliestFirstWithUpdatesAndRemovals() {
    var queue = DeadlineQueue<String>()
    queue.set("a", 30)
    queue.set("b", 10)
    queue.set("c", 20)
    queue.set("d", nil)
    #expect(queue.earliest() == 10)
    queue.set("b", 40)  // moved later
    queue.set("c", nil)  // cleared
    #expect(queue.earliest() == 30)
    #expect(queue.popDue(35) == ["a"])
    #expect(queue.popDue(100) == ["b"])
    #expect(queue.earliest() == nil && queue.count == 0)
  }

  @Test func matchesASortedListUnderRandomUpdates() {
    var queue = DeadlineQueue<Int>()
    var model: [Int: Double] = [:]
    var random = SeededRandom(seed: 42)
    var now = 0.0
    for _ in 0..<5_000 {
      let key = Int.random(in: 0..<200, using: &random)
      switch Int.random(in: 0..<10, using: &random) {
      case 0..<6:
        let at = now + Double(Int.random(in: 0..<1000, using: &random))
        queue.set(key, at)
        model[key] = at
      case 6:
        queue.set(key, nil)
        model[key] = nil
      default:
        now += Double(Int.random(in: 0..<50, using: &random))
        let due = queue.popDue(now)
        let expected = model.filter { $0.value <= now }
        #expect(Set(due) == Set(expected.keys))
        #expect(due.map { model[$0]! } == due.map { model[$0]! }.sorted())
        for key in due { model[key] = nil }
      }
      #expect(queue.earliest() == model.values.min())
    }
  }
}
