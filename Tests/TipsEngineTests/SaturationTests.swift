import Testing
import TipsJSON
import TipsTestSupport

@testable import TipsEngine

/// Skipping tips a donation cannot change (`Engine+Saturation`): an engine that skips them must be indistinguishable
/// from one that re-evaluates every tip reading the donated event (`skipsSaturatedTips: false`).
@Suite("Saturated tips: a donation skips the tips it cannot change, and nothing observable differs")
struct SaturationTests {
  /// Two engines on one clock, one skipping saturated tips and one not; every operation runs on both and everything
  /// observable must agree after it.
  final class Pair {
    let clock = VirtualClock(now: t0)
    let skipping: Engine
    let reference: Engine
    var operations = 0

    init() {
      skipping = Engine(clock: clock, configuration: EngineConfiguration(skipsSaturatedTips: true))
      reference = Engine(clock: clock, configuration: EngineConfiguration(skipsSaturatedTips: false))
    }

    /// Runs `operation` on both engines and checks that their results and every observable state agree.
    @discardableResult
    func run(
      _ label: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation,
      _ operation: (Engine) throws -> Mutation
    ) -> Mutation? {
      operations += 1
      let first = Result { try operation(skipping) }
      let second = Result { try operation(reference) }
      switch (first, second) {
      case (.success(let a), .success(let b)):
        #expect(a.changes == b.changes, "changes after \(label())", sourceLocation: sourceLocation)
        #expect(a.writes == b.writes, "writes after \(label())", sourceLocation: sourceLocation)
      case (.failure(let a), .failure(let b)):
        #expect("\(a)" == "\(b)", "errors after \(label())", sourceLocation: sourceLocation)
      default:
        Issue.record("one engine failed and the other did not: \(label())", sourceLocation: sourceLocation)
      }
      compare(label(), sourceLocation: sourceLocation)
      return try? first.get()
    }

    func compare(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
      #expect(skipping.states() == reference.states(), "states after \(label)", sourceLocation: sourceLocation)
      #expect(skipping.groupIDs == reference.groupIDs, sourceLocation: sourceLocation)
      for group in reference.groupIDs {
        #expect(
          (try? skipping.currentTip(ofGroup: group)) == (try? reference.currentTip(ofGroup: group)),
          "group \(group) after \(label)", sourceLocation: sourceLocation)
      }
      #expect(skipping.snapshot() == reference.snapshot(), "snapshot after \(label)", sourceLocation: sourceLocation)
      #expect(
        skipping.nextChangeTime() == reference.nextChangeTime(), "next change time after \(label)",
        sourceLocation: sourceLocation)
    }

    func donate(_ event: String, _ info: JSONObject? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
      var counts: [String] = []
      run("donate \(event)", sourceLocation: sourceLocation) { engine in
        let result = try engine.donate(event, info: info)
        counts.append("\(result.count)/\(result.lifetime)")
        return result.mutation
      }
      #expect(counts.count == 2 && counts[0] == counts[1], "counts of \(event)", sourceLocation: sourceLocation)
    }

    func register(_ texts: String..., sourceLocation: SourceLocation = #_sourceLocation) throws {
      let definitions = try texts.map(tip)
      run("register", sourceLocation: sourceLocation) { try $0.register(definitions) }
    }
  }

  /// Rule trees over four events, a parameter and other tips' records; counts that saturate (gte/gt holding,
  /// lt/lte/eq/ne passed) and some that never do (`where`, `largestGroupBy`).
  static let rulePool = [
    #"{"event": "e0", "count": {"gte": 3}}"#,
    #"{"event": "e0", "count": {"gt": 1}}"#,
    #"{"event": "e0", "count": {"lt": 2}}"#,
    #"{"event": "e1", "count": {"lte": 2}}"#,
    #"{"event": "e1", "count": {"eq": 2}}"#,
    #"{"event": "e1", "count": {"ne": 1}}"#,
    #"{"event": "e0", "within": {"minutes": 30}, "count": {"gte": 2}}"#,
    #"{"event": "e1", "within": {"hours": 2}, "count": {"lt": 3}}"#,
    #"{"event": "e2", "within": {"minutes": 10}, "count": {"eq": 1}}"#,
    #"{"event": "e2", "count": {"gte": 1}}"#,
    #"{"event": "e0", "where": {"k": 1}, "count": {"gte": 1}}"#,
    #"{"event": "e2", "largestGroupBy": "k", "within": {"hours": 1}, "count": {"gte": 2}}"#,
    #"{"event": "e3", "count": {"gte": 1}}"#,
    #"{"parameter": "p", "gt": 1}"#,
    #"{"not": {"event": "e1", "within": {"minutes": 10}, "count": {"gte": 2}}}"#,
    #"{"anyOf": [{"event": "e3", "count": {"eq": 1}}, {"event": "e0", "count": {"gte": 4}}]}"#,
    #"{"allOf": [{"event": "e2", "count": {"gt": 0}}, {"not": {"event": "e0", "count": {"lt": 5}}}]}"#,
    #"{"tip": "t1", "status": "invalidated"}"#,
    #"{"tip": "t2", "status": "invalidated", "for": {"minutes": 20}}"#,
    #"{"tip": "t0", "displayed": {"gte": 1}}"#,
  ]

  static let optionsPool = [
    "", #", "options": {"maxDisplayCount": 2}"#, #", "options": {"ignoresDisplayFrequency": true}"#,
    #", "options": {"maxDisplayDuration": 30}"#,
  ]

  /// `t0 + seconds` as a schedule's ISO 8601 text.
  static func at(_ seconds: Double) -> String { ISO8601.string(from: t0 + seconds) }

  @Test(
    "differential: the engine with the saturation index and the one without agree after every operation",
    arguments: Array(UInt64(1)...20))
  func differential(seed: UInt64) throws {
    var random = SplitMix64(seed: seed &* 0x9E37_79B9)
    let pair = Pair()
    let ids = (0..<7).map { "t\($0)" }
    let events = ["e0", "e1", "e2", "e3", "unread"]
    var overrides: [TestingOverride] = []
    var saved: EngineSnapshot?
    pair.run("parameters") {
      try $0.defineParameters([ParameterDefinition(id: "p", defaultValue: 0)])
    }
    pair.run("install id") { try $0.setInstallID("install-\(seed)") }

    func randomTip(_ id: String) -> String {
      var rules: [String] = []
      for _ in 0..<Int.random(in: 0...3, using: &random) {
        let rule = Self.rulePool.randomElement(using: &random)!
        // Only lower-numbered tips are followed, so that no cycle forms.
        if let followed = ["t0", "t1", "t2"].first(where: { rule.contains("\"\($0)\"") }), followed >= id { continue }
        rules.append(rule)
      }
      var text = #"{"id": "\#(id)", "title": "T", "rules": [\#(rules.joined(separator: ", "))]"#
      text += Self.optionsPool.randomElement(using: &random)!
      switch Int.random(in: 0..<10, using: &random) {
      case 0:
        let from = Double(Int.random(in: -600...3_600, using: &random))
        text += #", "schedule": {"from": "\#(Self.at(pair.clock.now() - t0 + from))"}"#
      case 1:
        let until = Double(Int.random(in: 60...7_200, using: &random))
        text += #", "schedule": {"until": "\#(Self.at(pair.clock.now() - t0 + until))"}"#
      case 2:
        text += #", "variants": {"friendly": {"title": "F"}, "control": {"holdout": true}}"#
      default: break
      }
      return text + "}"
    }

    for id in ids.prefix(5) { try pair.register(randomTip(id)) }

    for step in 0..<2_500 {
      let roll = Int.random(in: 0..<100, using: &random)
      let id = ids.randomElement(using: &random)!
      let event = events.randomElement(using: &random)!
      switch roll {
      case 0..<40:
        let info: JSONObject? = Bool.random(using: &random) ? ["k": .int(Int64.random(in: 0..<3, using: &random))] : nil
        pair.donate(event, info)
      case 40..<50:
        pair.clock.advance(by: [0.5, 1, 60, 300, 600, 1_200, 1_800, 3_600, 7_200].randomElement(using: &random)!)
        if Bool.random(using: &random) { pair.run("advanceTime at \(step)") { $0.advanceTime() } }
      case 50..<52:
        // The clock goes back (a wall clock set back); sometimes time is advanced over it, sometimes not.
        pair.clock.advance(by: -[1.0, 60, 900].randomElement(using: &random)!)
        if Bool.random(using: &random) { pair.run("advanceTime after going back") { $0.advanceTime() } }
      case 52..<57:
        if pair.reference.state(of: id) != nil {
          let duration = Double(Int.random(in: 0..<20, using: &random))
          pair.run("recordDisplay \(id)") { try $0.recordDisplay(id, duration: duration) }
        }
      case 57..<60:
        if pair.reference.state(of: id) != nil {
          pair.run("invalidate \(id)") { try $0.invalidate(id, reason: .tipClosed) }
        }
      case 60..<62:
        if pair.reference.state(of: id) != nil { pair.run("resetEligibility \(id)") { try $0.resetEligibility(id) } }
      case 62..<65:
        let value = JSONValue.int(Int64.random(in: 0..<4, using: &random))
        pair.run("setParameter") { try $0.setParameter("p", value) }
      case 65..<68:
        let override: TestingOverride = [.showAll, .hideAll, .show([id]), .hide([id]), .clear].randomElement(
          using: &random)!
        if override == .clear { overrides = [] } else { overrides.append(override) }
        pair.run("override") { $0.setTestingOverride(override) }
      case 68..<71:
        let frequency = DisplayFrequency.allCases.randomElement(using: &random)!
        pair.run("frequency") { $0.configure(displayFrequency: frequency) }
      case 71..<76:
        let text = randomTip(id)
        let definition = try tip(text)
        pair.run("register \(text)") { try $0.register([definition]) }
      case 76..<78:
        pair.run("unregister \(id)") { $0.unregister([id]) }
      case 78..<82:
        let members = Array(ids.shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)))
        let priority: GroupPriority = Bool.random(using: &random) ? .ordered : .firstAvailable
        let schedule: TipSchedule? =
          Bool.random(using: &random)
          ? nil
          : TipSchedule(
            from: pair.clock.now() + Double(Int.random(in: -300...1_800, using: &random)),
            until: pair.clock.now() + Double(Int.random(in: 1_900...9_000, using: &random)))
        let group = TipGroupDefinition(
          id: "g\(Int.random(in: 0..<2, using: &random))", priority: priority, tipIDs: members, schedule: schedule)
        pair.run("group") { try $0.registerGroup(group) }
      case 82..<83:
        if pair.reference.group("g0") != nil { pair.run("unregister group") { try $0.unregisterGroup("g0") } }
      case 83..<85:
        let limit = Int.random(in: 1...6, using: &random)
        pair.run("limit \(event) \(limit)") { try $0.setDonationLimit(event, limit) }
      case 85..<87:
        let age: Double? = Bool.random(using: &random) ? nil : [60.0, 900, 3_600].randomElement(using: &random)!
        pair.run("maxAge \(event)") { try $0.setDonationMaxAge(event, age) }
      case 87..<89:
        if Bool.random(using: &random) {
          let seconds: Double? = Bool.random(using: &random) ? 300 : nil
          pair.run("suppress") { try $0.suppress(seconds: seconds, reason: nil) }
        } else {
          pair.run("resume") { $0.resume() }
        }
      case 89..<92:
        // A merge from sync: donations from another device (older, newer or at the same instant) and a lifetime count.
        let now = pair.clock.now()
        let merged = (0..<Int.random(in: 1...3, using: &random)).map { _ in
          Donation(at: now + Double(Int.random(in: -900...5, using: &random)))
        }.sorted { $0.at < $1.at }
        let lifetime = pair.reference.lifetimeCount(event) + Int.random(in: 0...4, using: &random)
        pair.run("merge \(event)") { $0.mergeDonations(merged, lifetime: lifetime, intoEvent: event) }
      case 92..<94:
        let variant: String? = Bool.random(using: &random) ? "control" : "friendly"
        if pair.reference.definition(of: id)?.variants.isEmpty == false {
          pair.run("variant \(id)") { try $0.setVariant(id, variant) }
        }
      case 94..<96:
        if let snapshot = saved {
          pair.skipping.restore(snapshot)
          pair.reference.restore(snapshot)
          pair.compare("restore")
        }
        saved = pair.reference.snapshot()
      case 96..<97:
        pair.run("reset") { $0.reset() }
      default:
        // Time moves to exactly the next change the engines announce, with or without advanceTime.
        if let next = pair.reference.nextChangeTime() {
          pair.clock.set(next)
          if Bool.random(using: &random) { pair.run("advanceTime at the next change") { $0.advanceTime() } }
        }
      }
    }
    #expect(pair.operations > 2_000)
  }

  /// A tip saturated for `e` (its count already holds), with one of each time-driven instant pending; the instant
  /// passes with no advanceTime, and a donation then must find what the reference engine finds (for a window, a
  /// schedule, the cooldown and a follow-on `for`, a tip the reference re-evaluates changes: skipping it would be
  /// seen).
  @Test(
    "a donation after a time-driven instant, before advanceTime, re-evaluates as before",
    arguments: ["window", "age", "schedule", "cooldown", "suppression", "follow", "groupSchedule"])
  func timeDrivenInstant(kind: String) throws {
    let pair = Pair()
    switch kind {
    case "window":
      try pair.register(
        #"{"id": "a", "title": "A", "rules": [{"event": "e", "within": {"minutes": 10}, "count": {"gte": 2}}]}"#)
    case "age":
      pair.run("age") { try $0.setDonationMaxAge("e", 600) }
      try pair.register(#"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 2}}]}"#)
    case "schedule":
      try pair.register(
        #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}], "schedule": {"until": "\#(Self.at(600))"}}"#
      )
    case "cooldown":
      pair.run("frequency") { $0.configure(displayFrequency: .hourly) }
      try pair.register(
        #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}]}"#,
        #"{"id": "b", "title": "B"}"#)
      pair.run("display b") { try $0.recordDisplay("b") }
    case "suppression":
      try pair.register(#"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}]}"#)
      pair.run("suppress") { try $0.suppress(seconds: 600, reason: nil) }
    case "follow":
      try pair.register(
        #"{"id": "b", "title": "B"}"#,
        #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}, {"tip": "b", "status": "invalidated", "for": {"minutes": 10}}]}"#
      )
      pair.run("invalidate b") { try $0.invalidate("b", reason: .actionPerformed) }
    default:
      try pair.register(
        #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}]}"#, #"{"id": "c", "title": "C"}"#)
      let group = TipGroupDefinition(
        id: "g", priority: .firstAvailable, tipIDs: ["a", "c"], schedule: TipSchedule(until: t0 + 600))
      pair.run("group") { try $0.registerGroup(group) }
    }
    // Saturate the tip and let the skipping engine learn it: these donations skip it.
    for _ in 0..<3 { pair.donate("e") }
    #expect(pair.reference.nextChangeTime() != nil, "\(kind) leaves an instant pending")
    let next = try #require(pair.reference.nextChangeTime())
    pair.clock.set(next + 1)
    pair.donate("e")
    pair.donate("e")
    pair.run("advanceTime") { $0.advanceTime() }
    pair.donate("e")
  }

  @Test("a donation to an event no rule reads changes nothing observable")
  func unreadEvent() throws {
    let clock = VirtualClock(now: t0)
    let engine = Engine(clock: clock)
    _ = try engine.register([
      try tip(#"{"id": "a", "title": "A", "rules": [{"event": "e", "within": {"minutes": 10}, "count": {"gte": 2}}]}"#),
      try tip(#"{"id": "b", "title": "B", "rules": [{"event": "e", "count": {"lt": 1}}]}"#),
      try tip(#"{"id": "c", "title": "C", "schedule": {"until": "\#(Self.at(900))"}}"#),
    ])
    _ = try engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["a", "b", "c"]))
    _ = try engine.donate("e")
    let states = engine.states()
    let current = try engine.currentTip(ofGroup: "g")
    let next = engine.nextChangeTime()
    var before = engine.snapshot()
    for i in 0..<50 {
      clock.advance(by: 1)
      let (count, lifetime, mutation) = try engine.donate("nobody.reads", info: ["i": .int(Int64(i))])
      #expect(count == i + 1 && lifetime == i + 1)
      #expect(mutation.changes.isEmpty)
      #expect(mutation.writes.count == 1)
      guard case .donation(let event, let donation, _) = mutation.writes.first else {
        Issue.record("expected only the donation's write, got \(mutation.writes)")
        continue
      }
      #expect(event == "nobody.reads" && donation.at == clock.now())
    }
    #expect(engine.states() == states)
    #expect(try engine.currentTip(ofGroup: "g") == current)
    #expect(engine.nextChangeTime() == next)
    // Only the donations themselves are new in the durable state.
    let after = engine.snapshot()
    #expect(after.donations["nobody.reads"]?.count == 50)
    before.donations["nobody.reads"] = after.donations["nobody.reads"]
    #expect(after == before)
  }

  @Test("a saturated tip is skipped: its rules are not evaluated again while nothing else changes")
  func skipsWhatCannotChange() throws {
    let pair = Pair()
    try pair.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 2}}, {"event": "e", "within": {"hours": 1}, "count": {"gt": 0}}]}"#,
      #"{"id": "b", "title": "B", "rules": [{"event": "e", "count": {"lt": 4}}]}"#,
      #"{"id": "c", "title": "C", "rules": [{"event": "e", "where": {"k": 1}, "count": {"gte": 1}}]}"#)
    func live() -> [String] { pair.skipping.logs["e"]!.live.map { pair.skipping.slots[$0]!.id } }
    pair.donate("e")
    // One donation: a's plain count (1) may still reach 2, b's (1 < 4) may still fail.
    #expect(live() == ["a", "b", "c"])
    pair.clock.advance(by: 1)
    pair.donate("e")
    // Two: a's counts hold and can only grow; b's may still fail; c filters, so it is never skipped.
    #expect(live() == ["b", "c"])
    for i in 0..<6 {
      pair.clock.advance(by: 1)
      pair.donate("e", i == 4 ? ["k": 1] : nil)
    }
    #expect(live() == ["c"])
    // Any other mutation makes every dependent live again for the next donation, which re-evaluates them all.
    pair.run("frequency") { $0.configure(displayFrequency: .daily) }
    #expect(pair.skipping.logs["e"]!.liveEpoch != pair.skipping.liveEpoch)
    pair.donate("e")
    #expect(live() == ["c"])
    #expect(pair.reference.state(of: "a")?.shouldDisplay == true)
    #expect(pair.reference.state(of: "b")?.status == .pending)
    #expect(pair.reference.state(of: "c")?.shouldDisplay == true)
  }
}
