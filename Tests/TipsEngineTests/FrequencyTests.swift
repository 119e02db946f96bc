import Testing
import TipsEngine
import TipsJSON

@Suite("Display frequency")
struct FrequencyTests {
  static let periods: [(DisplayFrequency, Double)] = [
    (.hourly, 3_600), (.daily, 86_400), (.weekly, 604_800), (.monthly, 2_592_000),
  ]

  @Test("periods: immediate 0, hourly, daily, weekly, monthly = 30 days")
  func periodValues() {
    #expect(DisplayFrequency.immediate.period == 0)
    for (frequency, seconds) in Self.periods { #expect(frequency.period == seconds) }
  }

  @Test("a display starts a cooldown that holds back tips never displayed", arguments: periods)
  func cooldown(frequency: DisplayFrequency, period: Double) throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: frequency))
    #expect(h.engine.displayFrequency == frequency)
    try h.register(
      #"{"id": "first", "title": "1"}"#,
      #"{"id": "second", "title": "2"}"#,
      #"{"id": "bypass", "title": "3", "options": {"ignoresDisplayFrequency": true}}"#)
    #expect(h.engine.nextChangeTime() == nil)
    h.apply(try h.engine.recordDisplay("first"))
    // The displayed tip keeps showing; the one never displayed waits; the bypassing one is unaffected.
    #expect(h.lastTipChanges == [TipState(id: "second", status: .pending, shouldDisplay: false)])
    #expect(h.shows("first") && !h.shows("second") && h.shows("bypass"))
    #expect(h.engine.nextChangeTime() == t0 + period)
    h.advance(period - 1)
    #expect(h.status("second") == .pending)
    #expect(h.advance(1) == [.tip(TipState(id: "second", status: .available, shouldDisplay: true))])
    #expect(h.engine.nextChangeTime() == nil)
  }

  @Test("immediate never holds a tip back")
  func immediate() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#)
    h.apply(try h.engine.recordDisplay("a"))
    #expect(h.shows("b"))
    #expect(h.engine.nextChangeTime() == nil)
  }

  @Test("every display restarts the cooldown; a display of a tip that ignores frequency does not")
  func restart() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .hourly))
    try h.register(
      #"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#,
      #"{"id": "i", "title": "I", "options": {"ignoresDisplayFrequency": true}}"#)
    h.apply(try h.engine.recordDisplay("a"))
    h.advance(1_800)
    h.apply(try h.engine.recordDisplay("a"))  // a repeat display restarts it
    #expect(h.engine.nextChangeTime() == t0 + 1_800 + 3_600)
    h.advance(1_800)
    #expect(h.status("b") == .pending)
    h.apply(try h.engine.recordDisplay("i"))
    #expect(h.engine.snapshot().cooldownStartedAt == t0 + 1_800)
    h.advance(1_800)
    #expect(h.status("b") == .available)
  }

  @Test("a tip whose rules start holding during the cooldown waits for its end")
  func rulesDuringCooldown() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .daily))
    try h.register(
      #"{"id": "a", "title": "A"}"#,
      #"{"id": "b", "title": "B", "rules": [{"event": "e", "count": {"gte": 1}}]}"#)
    h.apply(try h.engine.recordDisplay("a"))
    #expect(h.engine.nextChangeTime() == nil)  // nothing is held back yet
    h.advance(100)
    #expect(h.donate("e").isEmpty)
    #expect(h.status("b") == .pending)
    #expect(h.engine.nextChangeTime() == t0 + 86_400)
    h.clock.set(t0 + 86_400)
    h.apply(h.engine.advanceTime())
    #expect(h.lastTipChanges == [TipState(id: "b", status: .available, shouldDisplay: true)])
  }

  @Test("changing the frequency re-evaluates held tips")
  func reconfigure() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#)
    h.apply(try h.engine.recordDisplay("a"))  // recorded even while immediate
    h.apply(h.engine.configure(displayFrequency: .daily))
    #expect(h.lastTipChanges == [TipState(id: "b", status: .pending, shouldDisplay: false)])
    #expect(h.apply(h.engine.configure(displayFrequency: .daily)).isEmpty)
    h.apply(h.engine.configure(displayFrequency: .immediate))
    #expect(h.lastTipChanges == [TipState(id: "b", status: .available, shouldDisplay: true)])
    h.apply(h.engine.configure(displayFrequency: .hourly))
    h.advance(3_600)
    #expect(h.shows("b"))
    #expect(h.engine.snapshot().displayFrequency == .hourly)
  }

  @Test("resetEligibility makes a displayed tip subject to the cooldown again")
  func resetEligibilityAndCooldown() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .weekly))
    try h.register(#"{"id": "a", "title": "A"}"#)
    h.apply(try h.engine.recordDisplay("a"))
    #expect(h.shows("a"))
    h.apply(try h.engine.resetEligibility("a"))
    #expect(h.status("a") == .pending)
    h.advance(604_800)
    #expect(h.shows("a"))
  }

  @Test("an invalidated tip is not held by the cooldown and does not keep a wake-up")
  func invalidatedNotHeld() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .hourly))
    try h.register(#"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#)
    h.apply(try h.engine.recordDisplay("a"))
    #expect(h.engine.nextChangeTime() == t0 + 3_600)
    h.apply(try h.engine.invalidate("b", reason: .tipClosed))
    #expect(h.engine.nextChangeTime() == nil)
  }
}
