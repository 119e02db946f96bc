import Testing
import TipsEngine
import TipsJSON

@Suite("Testing overrides")
struct OverrideTests {
  /// Every permutation of a list.
  static func permutations<T>(_ items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    var result: [[T]] = []
    for (index, item) in items.enumerated() {
      var rest = items
      rest.remove(at: index)
      for tail in permutations(rest) { result.append([item] + tail) }
    }
    return result
  }

  @Test("precedence is show these > hide these > show all > hide all, whatever the order of the calls")
  func precedenceInAnyOrder() throws {
    let all: [TestingOverride] = [.show(["x"]), .hide(["x"]), .showAll, .hideAll]
    for mask in 0..<16 {
      let chosen = all.indices.filter { mask & (1 << $0) != 0 }.map { all[$0] }
      let expected: Bool? =
        chosen.contains(.show(["x"]))
        ? true
        : chosen.contains(.hide(["x"]))
          ? false : chosen.contains(.showAll) ? true : chosen.contains(.hideAll) ? false : nil
      for order in Self.permutations(chosen) {
        let h = Harness()
        // x: pending, invalidated-free; y: available; both untouched by per-id overrides except x.
        try h.register(
          #"{"id": "x", "title": "X", "rules": [{"event": "never", "count": {"gte": 1}}]}"#,
          #"{"id": "y", "title": "Y"}"#)
        for override in order { h.apply(h.engine.setTestingOverride(override)) }
        #expect(h.shows("x") == (expected ?? false), "order \(order)")
        let yExpected = chosen.contains(.showAll) || !chosen.contains(.hideAll)
        #expect(h.shows("y") == yExpected, "order \(order)")
        h.apply(h.engine.setTestingOverride(.clear))
        #expect(!h.shows("x") && h.shows("y"))
      }
    }
  }

  @Test("show ignores rules, frequency and invalidation; the tip reads available")
  func showOverridesEverything() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .monthly))
    try h.register(
      #"{"id": "pending", "title": "P", "rules": [{"event": "never", "count": {"gte": 1}}]}"#,
      #"{"id": "closed", "title": "C"}"#, #"{"id": "fresh", "title": "F"}"#, #"{"id": "shown", "title": "S"}"#)
    h.apply(try h.engine.invalidate("closed", reason: .tipClosed))
    h.apply(try h.engine.recordDisplay("shown"))
    #expect(h.status("fresh") == .pending)  // held by the cooldown
    h.apply(h.engine.setTestingOverride(.show(["pending", "closed", "fresh"])))
    #expect(
      h.lastTipChanges == [
        TipState(id: "pending", status: .available, shouldDisplay: true),
        TipState(id: "closed", status: .available, shouldDisplay: true),
        TipState(id: "fresh", status: .available, shouldDisplay: true),
      ])
    h.apply(h.engine.setTestingOverride(.clear))
    #expect(h.status("closed") == .invalidated(.tipClosed))
    #expect(h.status("pending") == .pending && h.status("fresh") == .pending)
  }

  @Test("hide keeps the status but not shouldDisplay")
  func hide() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#)
    h.apply(h.engine.setTestingOverride(.hide(["a"])))
    #expect(h.last == [.tip(TipState(id: "a", status: .available, shouldDisplay: false))])
    h.apply(h.engine.setTestingOverride(.hideAll))
    #expect(h.last == [.tip(TipState(id: "b", status: .available, shouldDisplay: false))])
    #expect(h.apply(h.engine.setTestingOverride(.hideAll)).isEmpty)
  }

  @Test("overrides apply to tips registered later and survive reset, but are not durable")
  func laterTipsAndReset() throws {
    let h = Harness()
    h.apply(h.engine.setTestingOverride(.showAll))
    h.apply(h.engine.setTestingOverride(.hide(["b"])))
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "never", "count": {"gte": 1}}]}"#, #"{"id": "b", "title": "B"}"#)
    #expect(h.shows("a") && !h.shows("b"))
    h.apply(h.engine.reset())
    #expect(h.shows("a") && !h.shows("b"))
    #expect(h.engine.snapshot() == EngineSnapshot())
  }

  @Test("show/hide add to their sets")
  func setsAccumulate() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#, #"{"id": "c", "title": "C"}"#)
    h.apply(h.engine.setTestingOverride(.hide(["a"])))
    h.apply(h.engine.setTestingOverride(.hide(["b"])))
    #expect(!h.shows("a") && !h.shows("b") && h.shows("c"))
    h.apply(h.engine.setTestingOverride(.clear))
    #expect(h.shows("a") && h.shows("b"))
  }
}
