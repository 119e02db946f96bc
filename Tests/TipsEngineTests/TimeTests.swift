import Testing
import TipsEngine
import TipsJSON

@Suite("Time-driven re-evaluation")
struct TimeTests {
  @Test("a donation leaving a window changes the tip with no new donation")
  func windowExpiry() throws {
    let h = Harness()
    try h.register(
      #"{"id": "recent", "title": "R", "rules": [{"event": "e", "within": {"minutes": 5}, "count": {"gte": 2}}]}"#)
    #expect(h.engine.nextChangeTime() == nil)
    h.donate("e")
    h.clock.advance(by: 60)
    h.donate("e")
    #expect(h.shows("recent"))
    #expect(h.engine.nextChangeTime() == t0 + 300)
    h.clock.set(t0 + 299)
    #expect(h.apply(h.engine.advanceTime()).isEmpty)
    h.clock.set(t0 + 300)
    #expect(h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "recent", status: .pending, shouldDisplay: false))])
    #expect(h.engine.nextChangeTime() == t0 + 360)
    h.clock.set(t0 + 360)
    #expect(h.apply(h.engine.advanceTime()).isEmpty)
    #expect(h.engine.nextChangeTime() == nil)
  }

  @Test("a not-within rule becomes true when the donation ages out")
  func notWithin() throws {
    let h = Harness()
    try h.register(
      #"{"id": "quiet", "title": "Q", "rules": [{"not": {"event": "shown", "within": {"days": 7}, "count": {"gte": 1}}}]}"#
    )
    #expect(h.shows("quiet"))
    h.donate("shown")
    #expect(!h.shows("quiet"))
    let next = try #require(h.engine.nextChangeTime())
    #expect(next == t0 + 604_800)
    h.clock.set(next)
    #expect(h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "quiet", status: .available, shouldDisplay: true))])
  }

  @Test("nextChangeTime is the earliest of all windows and the cooldown, and ignores unwatched events")
  func earliest() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .hourly))
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "x", "within": {"hours": 2}, "count": {"gte": 1}}]}"#,
      #"{"id": "b", "title": "B", "rules": [{"event": "x", "within": {"minutes": 90}, "count": {"gte": 1}}]}"#,
      #"{"id": "c", "title": "C", "rules": [{"event": "y", "count": {"gte": 1}}]}"#,
      #"{"id": "d", "title": "D"}"#)
    h.donate("y")
    h.donate("unwatched")
    #expect(h.engine.nextChangeTime() == nil)
    h.donate("x")
    #expect(h.engine.nextChangeTime() == t0 + 5_400)
    h.clock.advance(by: 10)
    h.apply(try h.engine.recordDisplay("d"))
    #expect(h.engine.nextChangeTime() == t0 + 10 + 3_600)
    h.clock.set(t0 + 3_610)
    h.apply(h.engine.advanceTime())
    #expect(Set(h.lastTipChanges.map(\.id)) == ["a", "b", "c"])
    #expect(h.engine.nextChangeTime() == t0 + 5_400)
  }

  @Test("advanceTime with nothing due reports nothing")
  func nothingDue() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#)
    #expect(h.advance(1_000_000).isEmpty)
  }

  @Test("a clock that goes backwards is handled by a full re-evaluation")
  func backwards() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "within": {"hours": 1}, "count": {"gte": 1}}]}"#)
    h.donate("e")
    h.advance(3_600)
    #expect(!h.shows("a"))
    h.clock.set(t0 + 1_000)
    #expect(h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "a", status: .available, shouldDisplay: true))])
    h.clock.set(t0 + 5_000)
    #expect(h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "a", status: .pending, shouldDisplay: false))])
  }

  @Test("the virtual clock moves only when told")
  func virtualClock() {
    let clock = VirtualClock(now: 10)
    #expect(clock.now() == 10)
    clock.advance(by: 5)
    #expect(clock.now() == 15)
    clock.set(3)
    #expect(clock.now() == 3)
    #expect(VirtualClock().now() == 0)
    let system = SystemClock().now()
    #expect(system > 1_600_000_000)
  }
}
