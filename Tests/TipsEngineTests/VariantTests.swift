import Testing
import TipsEngine
import TipsJSON

@Suite("A/B variants and lifetime counts")
struct VariantTests {
  static let filterTip = """
    {"id": "filter.tip", "title": "Narrow it down", "rules": [{"event": "search.opened", "count": {"gte": 1}}],
     "actions": [{"id": "ok", "title": "OK"}],
     "variants": {"friendly": {"title": "Too many results? Try a filter"},
                  "direct": {"title": "Filter results", "actions": [{"id": "go", "title": "Go", "invalidate": false}]}}}
    """

  @Test("the hash is FNV-1a 64 + SplitMix64, the same everywhere (vectors from an independent implementation)")
  func stableHash() {
    // Computed by an independent Python implementation of the documented hash, protocol/tests/test_variant_hash.py,
    // which checks itself against published FNV-1a and SplitMix64 vectors and recomputes this list (run by
    // protocol/run-tests): change one side and the other fails.
    let expected = [0, 1, 1, 1, 0, 1, 0, 0, 1, 1]
    for (i, index) in expected.enumerated() {
      #expect(Engine.variantIndex(installID: "install-\(i)", tipID: "filter.tip", count: 2) == index)
    }
  }

  @Test("10,000 install ids split evenly: each variant within 2 points of its share", arguments: [2, 3])
  func evenSplit(variants: Int) {
    var counts = [Int](repeating: 0, count: variants)
    for i in 0..<10_000 {
      counts[Engine.variantIndex(installID: "install-\(i)", tipID: "filter.tip", count: variants)] += 1
    }
    for count in counts {
      let share = Double(count) / 10_000
      #expect(abs(share - 1 / Double(variants)) <= 0.02, "\(counts)")
    }
  }

  @Test("the install id picks the variant; content, actions and records are the variant's; events are shared")
  func perVariant() throws {
    let h = Harness()
    h.apply(try h.engine.setInstallID("install-1"))  // → index 1: "direct"
    try h.register(Self.filterTip)
    #expect(h.state("filter.tip")?.variant == "direct")
    #expect(h.engine.definition(of: "filter.tip")?.withVariant("direct").actions.map(\.id) == ["go"])
    #expect(h.engine.definition(of: "filter.tip")?.withVariant("friendly").actions.map(\.id) == ["ok"])
    h.donate("search.opened")
    h.apply(try h.engine.recordDisplay("filter.tip"))
    #expect(h.engine.record(of: "filter.tip").displayCount == 1)

    // Forcing the other variant: its own empty record, the same (shared) events, so it is available at once.
    let changes = h.apply(try h.engine.setVariant("filter.tip", "friendly"))
    #expect(changes == [.tip(TipState(id: "filter.tip", status: .available, shouldDisplay: true, variant: "friendly"))])
    #expect(h.engine.record(of: "filter.tip").displayCount == 0)
    h.apply(try h.engine.invalidate("filter.tip", reason: .tipClosed))
    #expect(h.status("filter.tip") == .invalidated(.tipClosed))

    // Back to the hashed pick: "direct" kept its display and is still valid.
    h.apply(try h.engine.setVariant("filter.tip", nil))
    #expect(
      h.state("filter.tip") == TipState(id: "filter.tip", status: .available, shouldDisplay: true, variant: "direct"))
    #expect(h.engine.record(of: "filter.tip").displayCount == 1)
    let snapshot = h.engine.snapshot()
    #expect(snapshot.tipRecords["filter.tip\u{1F}friendly"]?.invalidationReason == .tipClosed)
    #expect(snapshot.tipRecords["filter.tip\u{1F}direct"]?.displayCount == 1)
    #expect(snapshot.tipRecords["filter.tip"] == nil)

    #expect(
      throws: EngineError.invalidArgument(
        argument: "variant", problem: "must name one of tip filter.tip's variants: friendly, direct (got urgent)")
    ) {
      try h.engine.setVariant("filter.tip", "urgent")
    }
    try h.register(#"{"id": "plain.tip", "title": "P"}"#)
    #expect(h.state("plain.tip")?.variant == nil)
    #expect(
      throws: EngineError.invalidArgument(
        argument: "variant", problem: "cannot be set: tip plain.tip declares no variants")
    ) {
      try h.engine.setVariant("plain.tip", "x")
    }
  }

  @Test("a variant is sticky across restarts, survives an added variant, and a forced one stays forced")
  func sticky() throws {
    let first = Harness()
    first.apply(try first.engine.setInstallID("install-0"))  // → index 0: "friendly"
    try first.register(
      Self.filterTip, #"{"id": "b.tip", "title": "B", "variants": {"x": {"title": "X"}, "y": {"title": "Y"}}}"#)
    #expect(first.state("filter.tip")?.variant == "friendly")
    let pickedB = try #require(first.state("b.tip")?.variant)
    let forced = pickedB == "x" ? "y" : "x"
    first.apply(try first.engine.setVariant("b.tip", forced))

    // A restart from what the store keeps, with a third variant declared first: nobody moves.
    let second = Harness(snapshot: FakeStore.replaying(first.writes))
    try second.register(
      #"{"id": "filter.tip", "title": "T", "variants": {"urgent": {"title": "U"}, "friendly": {"title": "F"}, "direct": {"title": "D"}}}"#,
      #"{"id": "b.tip", "title": "B", "variants": {"x": {"title": "X"}, "y": {"title": "Y"}}}"#)
    #expect(second.state("filter.tip")?.variant == "friendly")
    #expect(second.state("b.tip")?.variant == forced)
    #expect(second.engine.installIdentifier == "install-0")

    // A variant that is no longer declared falls back to the hashed pick among the declared ones.
    second.apply(
      try second.engine.register([try tip(#"{"id": "filter.tip", "title": "T", "variants": {"only": {"title": "O"}}}"#)]
      ))
    #expect(second.state("filter.tip")?.variant == "only")
  }

  @Test("a new install id reassigns only tips this install has not seen")
  func installIDChange() throws {
    let h = Harness()
    h.apply(try h.engine.setInstallID("install-0"))
    let seen = #"{"id": "seen.tip", "title": "S", "variants": {"a": {"title": "A"}, "b": {"title": "B"}}}"#
    let unseen = #"{"id": "unseen.tip", "title": "U", "variants": {"a": {"title": "A"}, "b": {"title": "B"}}}"#
    try h.register(seen, unseen)
    h.apply(try h.engine.recordDisplay("seen.tip"))
    let seenVariant = h.state("seen.tip")?.variant
    // Find an install id that moves both tips, so the test shows the difference.
    var other = ""
    for i in 0..<100 {
      let candidate = "other-\(i)"
      let moves = { (tipID: String, current: String?) in
        ["a", "b"][Engine.variantIndex(installID: candidate, tipID: tipID, count: 2)] != current
      }
      if moves("seen.tip", seenVariant) && moves("unseen.tip", h.state("unseen.tip")?.variant) {
        other = candidate
        break
      }
    }
    #expect(!other.isEmpty)
    let before = h.state("unseen.tip")?.variant
    h.apply(try h.engine.setInstallID(other))
    #expect(h.state("seen.tip")?.variant == seenVariant)
    #expect(h.state("unseen.tip")?.variant != before)
    #expect(h.engine.snapshot().installID == other)
  }

  @Test("1,500 donations: a plain gte 1001 holds (lifetime), a windowed one cannot (history of 1000)")
  func lifetime() throws {
    let h = Harness()
    h.checkReplay = false
    try h.register(
      #"{"id": "loyal.tip", "title": "L", "rules": [{"event": "app.opened", "count": {"gte": 1001}}]}"#,
      #"{"id": "burst.tip", "title": "B", "rules": [{"event": "app.opened", "within": {"days": 1}, "count": {"gte": 1001}}]}"#
    )
    for _ in 0..<1500 { h.apply(try h.engine.donate("app.opened").mutation) }
    #expect(h.engine.donationCount("app.opened") == 1000)
    #expect(h.engine.lifetimeCount("app.opened") == 1500)
    #expect(h.shows("loyal.tip"))
    #expect(!h.shows("burst.tip"))
    let restored = Harness(snapshot: FakeStore.replaying(h.writes))
    try restored.register(
      #"{"id": "loyal.tip", "title": "L", "rules": [{"event": "app.opened", "count": {"gte": 1001}}]}"#)
    #expect(restored.shows("loyal.tip"))
    #expect(restored.engine.lifetimeCount("app.opened") == 1500)
    // A datastore reset forgets the lifetime count too.
    restored.apply(restored.engine.reset())
    #expect(restored.engine.lifetimeCount("app.opened") == 0)
    #expect(!restored.shows("loyal.tip"))
  }
}
