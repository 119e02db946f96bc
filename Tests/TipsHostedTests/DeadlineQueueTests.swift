import Testing

@testable import TipsHosted

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
