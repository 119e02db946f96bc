import Testing
import TipsEngine
import TipsJSON

/// Each time-driven kind, met inside one long `clock/advance`: the change happens at its own instant (the step's
/// ``Mutation/at``, the exposure's `since`), not at the end of the advance.
@Suite("Time-driven changes at their instants: one per kind, and the issue's regressions")
struct TimeKindTests {
  enum Kind: String, CaseIterable, Sendable {
    case tipSchedule, groupSchedule, window, maxAge, followDelay, suppressionEnd, cooldownEnd
  }

  static let variants = #""variants": {"shown": {"title": "S"}, "held": {"holdout": true}}"#

  /// An engine where tip `x` becomes displayable only at the returned instant, by `kind` alone.
  static func gated(_ kind: Kind, variant: String) throws -> (TimedEngine, Timestamp) {
    let timed = TimedEngine()
    var rules = "[]"
    var schedule = ""
    var instant = t0
    switch kind {
    case .tipSchedule:
      instant = t0 + 5_400
      schedule = #", "schedule": {"from": "\#(ISO8601.string(from: instant))"}"#
    case .groupSchedule:
      instant = t0 + 5_400
    case .window:
      rules = #"[{"not": {"event": "e", "within": {"minutes": 90}, "count": {"gte": 1}}}]"#
      instant = t0 + 5_400
    case .maxAge:
      timed.run { try $0.setDonationMaxAge("e", 5_400.5) }
      rules = #"[{"not": {"event": "e", "count": {"gte": 1}}}]"#
      instant = t0 + 5_400.5
    case .followDelay:
      rules = #"[{"tip": "w", "status": "invalidated", "for": {"minutes": 90}}]"#
      instant = t0 + 5_400
    case .suppressionEnd:
      instant = t0 + 5_400.5
    case .cooldownEnd:
      timed.run { $0.configure(displayFrequency: .hourly) }
      instant = t0 + 3_600
    }
    // What gates `x` is in place before it is registered, so it is never displayable (nor exposed) before.
    timed.run { try $0.register([try tip(#"{"id": "w", "title": "W"}"#)]) }
    switch kind {
    case .groupSchedule:
      let group = TipGroupDefinition(
        id: "g", priority: .firstAvailable, tipIDs: ["x"], schedule: TipSchedule(from: instant))
      timed.run { try $0.registerGroup(group) }
    case .window, .maxAge: timed.run { try $0.donate("e").mutation }
    case .followDelay: timed.run { try $0.invalidate("w", reason: .tipClosed) }
    case .suppressionEnd: timed.run { try $0.suppress(seconds: 5_400.5, reason: nil) }
    case .cooldownEnd: timed.run { try $0.recordDisplay("w", duration: 1) }
    case .tipSchedule: break
    }
    timed.run { try $0.setInstallID("install-1") }
    timed.run {
      try $0.register([try tip(#"{"id": "x", "title": "X", "rules": \#(rules)\#(schedule), \#(variants)}"#)])
    }
    timed.run { try $0.setVariant("x", variant) }
    #expect(timed.engine.state(of: "x")?.shouldDisplay == false)
    #expect(timed.engine.snapshot().exposures.isEmpty)
    return (timed, instant)
  }

  @Test("a shown tip turns displayable at the instant, inside one long advance", arguments: Kind.allCases)
  func shownTip(kind: Kind) throws {
    let (timed, instant) = try Self.gated(kind, variant: "shown")
    #expect(timed.engine.state(of: "x")?.shouldDisplay == false)
    timed.log = []
    timed.move(to: t0 + 700_000.25)
    #expect(timed.engine.state(of: "x")?.shouldDisplay == true)
    let shown = timed.log.filter { $0.contains(#"id: "x""#) && $0.contains("shouldDisplay: true") }
    #expect(shown.count == 1 && shown.first?.hasPrefix("\(instant) ") == true, "\(timed.log)")
  }

  @Test("a held-out tip's exposure opens at the instant, inside one long advance", arguments: Kind.allCases)
  func heldOutTip(kind: Kind) throws {
    let (timed, instant) = try Self.gated(kind, variant: "held")
    #expect(timed.engine.snapshot().exposures.isEmpty)
    timed.move(to: t0 + 700_000.25)
    #expect(timed.engine.snapshot().exposures == ["x\u{1F}held": instant])
    #expect(timed.exposuresOpened == ["\(instant) exposure x/held since \(instant)"])
  }

  @Test("an instant that passed while time was not brought past it is due: nextChangeTime says so, and it steps there")
  func aMissedInstantIsDue() throws {
    let (timed, instant) = try Self.gated(.tipSchedule, variant: "held")
    // The clock passes the schedule's opening with no wake-up (a busy account, a late timer); a donation comes first.
    timed.clock.set(instant + 50)
    timed.run { try $0.donate("other").mutation }
    #expect(timed.engine.nextChangeTime() == instant)
    timed.move(to: instant + 50)
    #expect(timed.exposuresOpened == ["\(instant) exposure x/held since \(instant)"])
    #expect(timed.engine.nextChangeTime() == nil)
  }

  // MARK: - The issue's examples

  @Test("a held-out tip with no rules: the exposure opens when the suppression ends, not at the end of the advance")
  func exposureAtSuppressionEnd() throws {
    let timed = TimedEngine()
    timed.run { try $0.register([try tip(#"{"id": "t6", "title": "T6", \#(Self.variants)}"#)]) }
    timed.run { try $0.setVariant("t6", "held") }
    timed.run { try $0.suppress(seconds: 5_400.5, reason: nil) }
    #expect(timed.engine.snapshot().exposures.isEmpty)
    timed.move(to: t0 + 700_000.25)
    #expect(timed.engine.snapshot().exposures == ["t6\u{1F}held": t0 + 5_400.5])
  }

  /// A held-out tip whose rules go false (its `a` donation leaves a 1-hour window while `b` is still within 2
  /// hours) and true again (`b` leaves) while a daily cooldown runs.
  static func flapping() throws -> TimedEngine {
    let timed = TimedEngine()
    timed.run { $0.configure(displayFrequency: .daily) }
    let rules = #"""
      [{"anyOf": [{"event": "a", "within": {"hours": 1}, "count": {"gte": 1}},
                  {"not": {"event": "b", "within": {"hours": 2}, "count": {"gte": 1}}}]}]
      """#
    timed.run {
      try $0.register([
        try tip(#"{"id": "h", "title": "H", "rules": \#(rules), \#(variants)}"#),
        try tip(#"{"id": "t1", "title": "T1"}"#),
      ])
    }
    timed.run { try $0.setVariant("h", "held") }
    timed.run { try $0.donate("a").mutation }
    timed.run { try $0.donate("b").mutation }
    // Exposed before the cooldown starts: it counts as displayed, so t1's display does not take it away.
    #expect(timed.engine.snapshot().exposures == ["h\u{1F}held": t0])
    timed.run { try $0.recordDisplay("t1", duration: 1) }
    #expect(timed.engine.state(of: "h")?.status == .available)
    return timed
  }

  @Test("rules that go false and true inside one 4-hour advance leave the held-out tip pending, as 1-hour steps do")
  func flappingUnderCooldown() throws {
    let whole = try Self.flapping()
    whole.move(to: t0 + 4 * 3_600)
    let steps = try Self.flapping()
    for hour in 1...4 { steps.move(to: t0 + Double(hour) * 3_600) }
    #expect(whole.engine.state(of: "h")?.status == .pending)
    #expect(whole.log == steps.log)
    #expect(whole.engine.snapshot() == steps.engine.snapshot())
    // The exposure closed when `a` left the window, and none opened again under the cooldown.
    #expect(whole.log.last { $0.contains("exposure h/held") } == "\(t0 + 3_600) exposure h/held since closed")
  }

  @Test("a held-out tip whose exposure closes under a running cooldown reads pending, as its explanation says")
  func closedExposureUnderCooldown() throws {
    let timed = TimedEngine()
    timed.run { $0.configure(displayFrequency: .hourly) }
    timed.run {
      try $0.register([
        try tip(#"{"id": "t1", "title": "T1"}"#), try tip(#"{"id": "t6", "title": "T6", \#(Self.variants)}"#),
      ])
    }
    timed.run { try $0.setVariant("t6", "held") }
    #expect(timed.engine.snapshot().exposures == ["t6\u{1F}held": t0])
    timed.run { try $0.recordDisplay("t1", duration: 70) }
    timed.run { try $0.suppress(seconds: 86_400, reason: nil) }
    #expect(timed.engine.state(of: "t6")?.status == .pending)
    #expect(timed.engine.snapshot().exposures.isEmpty)
    let held = try timed.engine.explain("t6").json["heldBy"]?.arrayValue?.compactMap { $0["kind"]?.stringValue }
    #expect(held?.contains("cooldown") == true, "\(String(describing: held))")
    // Resuming changes nothing about it: it was already held back by the cooldown.
    let resumed = timed.engine.resume()
    #expect(!resumed.changes.contains { if case .tip(let state) = $0 { state.id == "t6" } else { false } })
    #expect(timed.engine.state(of: "t6")?.status == .pending)
  }

  @Test("a firstAvailable group moving to its held-out tip under the cooldown opens no exposure until it ends")
  func groupHoldoutUnderCooldown() throws {
    let timed = TimedEngine()
    timed.run { $0.configure(displayFrequency: .daily) }
    timed.run {
      try $0.register([
        try tip(#"{"id": "o", "title": "O"}"#), try tip(#"{"id": "h", "title": "H", \#(Self.variants)}"#),
      ])
    }
    timed.run { try $0.setVariant("h", "held") }
    // Alone, h was exposed; in the group, o comes first, so the exposure closes again (and h is fresh again).
    timed.run { try $0.registerGroup(TipGroupDefinition(id: "g", priority: .firstAvailable, tipIDs: ["o", "h"])) }
    #expect(timed.engine.snapshot().exposures.isEmpty)
    timed.log = []
    timed.run { try $0.recordDisplay("o", duration: 1) }
    timed.move(to: t0 + 60)
    timed.run { try $0.invalidate("o", reason: .tipClosed) }
    #expect(timed.engine.state(of: "h")?.status == .pending)
    #expect(timed.engine.snapshot().exposures.isEmpty)
    timed.move(to: t0 + 10 * 86_400)
    #expect(timed.engine.snapshot().exposures == ["h\u{1F}held": t0 + 86_400])
    #expect(timed.exposuresOpened == ["\(t0 + 86_400) exposure h/held since \(t0 + 86_400)"])
  }
}
