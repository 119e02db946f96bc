import Testing
import TipsEngine
import TipsJSON
import TipsTestSupport

@Suite("Holdouts: weighted, sticky assignment; held-out installs never display; counterfactual exposures")
struct HoldoutTests {
  static let filterTip = """
    {"id": "filter.tip", "title": "Narrow it down",
     "rules": [{"event": "search.opened", "within": {"hours": 1}, "count": {"gte": 1}}],
     "variants": {"friendly": {"title": "Try a filter"}, "control": {"holdout": true}}}
    """

  /// The share of 10,000 install ids each variant gets for `weights`.
  static func shares(_ weights: [Double?]) -> [Double] {
    var counts = [Int](repeating: 0, count: weights.count)
    for i in 0..<10_000 {
      counts[Engine.variantIndex(installID: "install-\(i)", tipID: "filter.tip", weights: weights)] += 1
    }
    return counts.map { Double($0) / 10_000 }
  }

  @Test(
    "10,000 install ids split within 2 points of the weights",
    arguments: [
      [9, 1], [1, 1, 2], [0.7, 0.3], [nil, nil, 2],
    ] as [[Double?]])
  func weightedSplit(weights: [Double?]) {
    let total = weights.map { $0 ?? 1 }.reduce(0, +)
    for (share, weight) in zip(Self.shares(weights), weights) {
      #expect(abs(share - (weight ?? 1) / total) <= 0.02, "\(Self.shares(weights))")
    }
  }

  @Test("equal (default or whole) weights pick exactly what the unweighted hash picked: no assignment moves")
  func stable() {
    for i in 0..<2_000 {
      let id = "install-\(i)"
      let before = Engine.variantIndex(installID: id, tipID: "filter.tip", count: 3)
      #expect(Engine.variantIndex(installID: id, tipID: "filter.tip", weights: [nil, nil, nil]) == before)
      #expect(Engine.variantIndex(installID: id, tipID: "filter.tip", weights: [1, 1, 1]) == before)
    }
  }

  /// A harness whose install is held out of filter.tip.
  static func heldOut() throws -> Harness {
    let h = Harness()
    try h.register(filterTip)
    h.apply(try h.engine.setVariant("filter.tip", "control"))
    #expect(h.engine.isHoldout("filter.tip"))
    return h
  }

  @Test("a held-out install never displays the tip; the instant it would have opens one counterfactual exposure")
  func counterfactual() throws {
    let h = try Self.heldOut()
    h.advance(5)
    let donated = try h.engine.donate("search.opened").mutation
    #expect(donated.writes.contains(.exposure(tipID: "filter.tip", variant: "control", since: t0 + 5)))
    h.apply(donated)
    #expect(
      h.state("filter.tip") == TipState(id: "filter.tip", status: .available, shouldDisplay: false, variant: "control"))
    let held = try h.engine.explain("filter.tip").json["heldBy"]
    #expect(held == [["kind": "holdout", "variant": "control", "exposedSince": .int(Int64(t0) + 5)]])
    // Still displayable (counterfactually): no second exposure.
    h.advance(60)
    let again = try h.engine.donate("search.opened").mutation
    #expect(!again.writes.contains { if case .exposure = $0 { true } else { false } })
    h.apply(again)
    // The window empties at t0 + 3665 (an hour after the second donation): the exposure ends; a new donation opens
    // a new one.
    h.clock.set(t0 + 3_665)
    let expired = h.engine.advanceTime()
    #expect(expired.writes.contains(.exposure(tipID: "filter.tip", variant: "control", since: nil)))
    h.apply(expired)
    #expect(h.engine.snapshot().exposures.isEmpty)
    h.donate("search.opened")
    #expect(h.engine.snapshot().exposures == ["filter.tip\u{1F}control": t0 + 3_665])
  }

  @Test("the exposure survives a restart (not counted twice) and ends when the install is moved off the holdout")
  func durable() throws {
    let h = try Self.heldOut()
    h.donate("search.opened")
    let restarted = Harness(now: t0 + 30, snapshot: FakeStore.replaying(h.writes))
    let registered = try restarted.engine.register([try tip(Self.filterTip)])
    #expect(!registered.writes.contains { if case .exposure = $0 { true } else { false } })
    restarted.apply(registered)
    #expect(restarted.state("filter.tip")?.variant == "control")
    let moved = try restarted.engine.setVariant("filter.tip", "friendly")
    #expect(moved.writes.contains(.exposure(tipID: "filter.tip", variant: "control", since: nil)))
    restarted.apply(moved)
    #expect(restarted.shows("filter.tip"))
  }

  @Test("suppression and the display-frequency cooldown hold the counterfactual back too")
  func heldBack() throws {
    let h = try Self.heldOut()
    h.apply(try h.engine.suppress(seconds: 100, reason: nil))
    h.donate("search.opened")
    #expect(h.engine.snapshot().exposures.isEmpty)
    h.advance(100)
    #expect(h.engine.snapshot().exposures == ["filter.tip\u{1F}control": t0 + 100])

    // Before its first exposure a held-out tip waits out the cooldown like any tip never displayed.
    let g = try Self.heldOut()
    g.apply(g.engine.configure(displayFrequency: .hourly))
    try g.register(#"{"id": "other.tip", "title": "O"}"#)
    g.apply(try g.engine.recordDisplay("other.tip"))
    g.advance(1_800)
    g.donate("search.opened")
    #expect(g.engine.snapshot().exposures.isEmpty)
    #expect(g.engine.nextChangeTime() == t0 + 3_600)
    g.advance(1_800)
    #expect(g.engine.snapshot().exposures == ["filter.tip\u{1F}control": t0 + 3_600])
  }

  @Test("another tip's display does not close an open exposure: the held-out tip counts as displayed for the cooldown")
  func cooldown() throws {
    let h = try Self.heldOut()
    h.apply(h.engine.configure(displayFrequency: .daily))
    try h.register(#"{"id": "other.tip", "title": "O"}"#)
    h.donate("search.opened")
    #expect(h.engine.snapshot().exposures == ["filter.tip\u{1F}control": t0])
    h.advance(60)
    let displayed = try h.engine.recordDisplay("other.tip")
    #expect(!displayed.writes.contains { if case .exposure = $0 { true } else { false } })
    h.apply(displayed)
    #expect(h.engine.snapshot().exposures == ["filter.tip\u{1F}control": t0])
  }

  @Test("groups pass a held-out tip over; its exposure opens when it would have been the group's current tip")
  func groups() throws {
    let h = try Self.heldOut()
    try h.register(#"{"id": "other.tip", "title": "O", "rules": [{"event": "x", "count": {"gte": 1}}]}"#)
    h.apply(
      try h.engine.registerGroup(
        TipGroupDefinition(id: "g", priority: .firstAvailable, tipIDs: ["other.tip", "filter.tip"])))
    h.donate("x")
    h.donate("search.opened")
    // other.tip is current, so the held-out filter.tip would not have shown either.
    #expect(try h.engine.currentTip(ofGroup: "g") == "other.tip")
    #expect(h.engine.snapshot().exposures.isEmpty)
    h.apply(try h.engine.invalidate("other.tip", reason: .tipClosed))
    // Now filter.tip would be current: the group shows nothing (it is held out) and the exposure opens.
    #expect(try h.engine.currentTip(ofGroup: "g") == nil)
    #expect(h.engine.snapshot().exposures == ["filter.tip\u{1F}control": t0])
    #expect(!h.shows("filter.tip"))

    // An ordered group does not wait on a held-out tip.
    try h.register(#"{"id": "third.tip", "title": "3"}"#)
    h.apply(
      try h.engine.registerGroup(TipGroupDefinition(id: "o", priority: .ordered, tipIDs: ["filter.tip", "third.tip"])))
    #expect(try h.engine.currentTip(ofGroup: "o") == "third.tip")
  }

  @Test("with an account (sync, hosted), a tip with a holdout is assigned from it: every device alike")
  func perAccount() throws {
    let plain = #"{"id": "plain.tip", "title": "P", "variants": {"a": {"title": "A"}, "b": {"title": "B"}}}"#
    var picks: [(holdout: String?, plain: String?)] = []
    for device in 0..<24 {
      let h = Harness(configuration: EngineConfiguration(holdoutAccount: "alice"))
      h.apply(try h.engine.setInstallID("device-\(device)"))
      try h.register(Self.filterTip, plain)
      picks.append((h.state("filter.tip")?.variant, h.state("plain.tip")?.variant))
    }
    let expected = ["friendly", "control"][Engine.variantIndex(installID: "alice", tipID: "filter.tip", count: 2)]
    #expect(picks.allSatisfy { $0.holdout == expected })
    // A tip without a holdout is still the device's own.
    #expect(Set(picks.map(\.plain)).count == 2)
  }

  @Test("holdout decoding: no copy, positive weights")
  func decoding() throws {
    let tip = try tip(
      #"{"id": "t", "title": "T", "variants": {"a": {"title": "A", "weight": 9}, "hold": {"holdout": true, "weight": 1}}}"#
    )
    #expect(tip.variants.map(\.holdout) == [false, true])
    #expect(tip.variants.map(\.weight) == [9, 1])
    #expect(try TipDefinition(json: tip.json, path: "tip") == tip)
    #expect(tip.withVariant("hold").title == "T")
    #expect(
      decodingError(#"{"id": "t", "title": "T", "variants": {"hold": {"holdout": true, "title": "H"}}}"#)
        == #"tips[2].variants.hold: unknown key "title" in a holdout (it has no copy)"#)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "variants": {"a": {"title": "A", "weight": 0}}}"#)
        == "tips[2].variants.a.weight: expected a positive number, got 0")
  }

  @Test("property: whatever happens, a held-out install never receives shouldDisplay true")
  func neverDisplays() throws {
    var generator = SplitMix64(seed: 2_025)
    for round in 0..<20 {
      let h = try Self.heldOut()
      h.checkReplay = round < 3
      h.apply(h.engine.configure(displayFrequency: [.immediate, .hourly, .daily].randomElement(using: &generator)!))
      for _ in 0..<150 {
        switch Int.random(in: 0..<8, using: &generator) {
        case 0, 1: h.donate("search.opened")
        case 2: h.advance(Double(Int.random(in: 1...5_000, using: &generator)))
        case 3: _ = try? h.apply(h.engine.recordDisplay("filter.tip"))
        case 4: h.apply(try h.engine.resetEligibility("filter.tip"))
        case 5: h.apply(try h.engine.suppress(seconds: Double(Int.random(in: 1...600, using: &generator)), reason: nil))
        case 6: h.apply(h.engine.resume())
        default: h.apply(h.engine.reset())
        }
        #expect(!h.shows("filter.tip"))
      }
      #expect(!h.allChanges.contains { if case .tip(let s) = $0 { s.shouldDisplay } else { false } })
    }
  }
}
