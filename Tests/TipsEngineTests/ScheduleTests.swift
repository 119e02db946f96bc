import Testing
import TipsEngine
import TipsJSON
import TipsTestSupport

@Suite("Schedules: a tip or a group shows only between from (inclusive) and until (exclusive)")
struct ScheduleTests {
  /// `t0 + seconds` as the schedule's ISO 8601 text.
  static func at(_ seconds: Double) -> String { ISO8601.string(from: t0 + seconds) }

  @Test("a tip's schedule opens at exactly from and closes at exactly until, with no donation")
  func opensAndCloses() throws {
    let h = Harness()
    try h.register(
      #"{"id": "sale.tip", "title": "Sale", "schedule": {"from": "\#(Self.at(100))", "until": "\#(Self.at(200))"}}"#)
    #expect(h.state("sale.tip") == TipState(id: "sale.tip", status: .pending, shouldDisplay: false))
    #expect(h.engine.nextChangeTime() == t0 + 100)
    h.clock.set(t0 + 99)
    #expect(h.apply(h.engine.advanceTime()).isEmpty)
    h.clock.set(t0 + 100)
    #expect(
      h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "sale.tip", status: .available, shouldDisplay: true))])
    #expect(h.engine.nextChangeTime() == t0 + 200)
    h.clock.set(t0 + 199.5)
    #expect(h.apply(h.engine.advanceTime()).isEmpty)
    h.clock.set(t0 + 200)
    #expect(h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "sale.tip", status: .pending, shouldDisplay: false))])
    #expect(h.engine.nextChangeTime() == nil)
  }

  @Test("a schedule never resets counts, and an invalidated tip stays invalidated when it closes")
  func keepsCounts() throws {
    let h = Harness()
    try h.register(#"{"id": "a.tip", "title": "A", "schedule": {"until": "\#(Self.at(60))"}}"#)
    h.apply(try h.engine.recordDisplay("a.tip", duration: 3))
    h.advance(60)
    #expect(h.status("a.tip") == .pending)
    #expect(h.engine.record(of: "a.tip").displayCount == 1)
    let explained = try h.engine.explain("a.tip")
    #expect(explained.json["heldBy"] == [["kind": "schedule", "from": nil, "until": .int(Int64(t0) + 60)]])
    #expect(explained.lines.contains { $0.contains("held by: schedule until") })
  }

  @Test("a closed tip lets its firstAvailable group move on; a closed group has no current tip")
  func groups() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a.tip", "title": "A", "schedule": {"from": "\#(Self.at(50))"}}"#, #"{"id": "b.tip", "title": "B"}"#)
    h.apply(
      try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .firstAvailable, tipIDs: ["a.tip", "b.tip"])))
    #expect(try h.engine.currentTip(ofGroup: "g") == "b.tip")
    h.advance(50)
    #expect(try h.engine.currentTip(ofGroup: "g") == "a.tip")
    #expect(h.lastGroupChanges == ["g": "a.tip"])

    let closing = TipGroupDefinition(
      id: "g", priority: .firstAvailable, tipIDs: ["a.tip", "b.tip"], schedule: TipSchedule(until: t0 + 100))
    h.apply(try h.engine.registerGroup(closing))
    #expect(h.engine.nextChangeTime() == t0 + 100)
    h.advance(49)
    #expect(h.shows("a.tip"))
    h.advance(1)
    #expect(try h.engine.currentTip(ofGroup: "g") == nil)
    #expect(!h.shows("a.tip") && !h.shows("b.tip"))
    // The tips themselves are still available: the group's schedule holds them back.
    #expect(h.status("a.tip") == .available)
    #expect(try h.engine.explain("a.tip").json["heldBy"]?[0]?["group"] == "g")
  }

  @Test("schedules decode from ISO 8601 (offsets too), encode in UTC, and refuse what is not an instant")
  func decoding() throws {
    let tip = try tip(
      #"{"id": "t", "title": "T", "schedule": {"from": "2027-01-01T09:00:00+09:00", "until": "2027-02-01T00:00:00Z"}}"#)
    #expect(tip.schedule == TipSchedule(from: 1_798_761_600, until: 1_801_440_000))
    #expect(tip.json["schedule"] == ["from": "2027-01-01T00:00:00Z", "until": "2027-02-01T00:00:00Z"])
    #expect(try TipDefinition(json: tip.json, path: "tip") == tip)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "schedule": {"from": "2027-02-30T00:00:00Z"}}"#)
        == #"tips[2].schedule.from: expected an ISO 8601 instant to the second, e.g. "2027-01-01T00:00:00Z""#)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "schedule": {}}"#)
        == #"tips[2].schedule: expected "from", "until" or both"#)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "schedule": {"since": "2027-01-01T00:00:00Z"}}"#)
        == #"tips[2].schedule: unknown key "since""#)
    // A schedule that never opens decodes (lint says so) and never shows.
    let h = Harness()
    try h.register(
      #"{"id": "never", "title": "N", "schedule": {"from": "\#(Self.at(10))", "until": "\#(Self.at(10))"}}"#)
    #expect(h.engine.definition(of: "never")?.schedule?.neverOpens == true)
    h.advance(10)
    #expect(!h.shows("never"))
  }

  @Test("ISO8601.timestamp is the inverse of ISO8601.string over four centuries")
  func iso8601RoundTrip() {
    var generator = SplitMix64(seed: 25)
    for _ in 0..<2_000 {
      let instant = Double(Int64.random(in: -6_000_000_000...12_000_000_000, using: &generator))
      let text = ISO8601.string(from: instant)
      #expect(ISO8601.timestamp(from: text) == instant, "\(text)")
    }
    #expect(ISO8601.timestamp(from: "2024-02-29T23:59:59Z") == 1_709_251_199)
    #expect(ISO8601.timestamp(from: "2023-02-29T00:00:00Z") == nil)
    #expect(ISO8601.timestamp(from: "2027-01-01T00:00:00.5Z") == nil)
    #expect(ISO8601.timestamp(from: "2027-01-01T05:30:00-05:30") == ISO8601.timestamp(from: "2027-01-01T11:00:00Z"))
  }
}
