import Testing
import TipsEngine
import TipsJSON

@Suite("Suppression: no tip displays while it runs; it ends by itself and survives a restart")
struct SuppressionTests {
  static let tips = [
    #"{"id": "a.tip", "title": "A"}"#,
    #"{"id": "b.tip", "title": "B", "rules": [{"event": "e", "count": {"gte": 1}}]}"#,
  ]

  @Test("a timed suppression hides every tip and ends at exactly its end, with no request")
  func timed() throws {
    let h = Harness()
    try h.register(Self.tips[0], Self.tips[1])
    h.donate("e")
    let changes = h.apply(try h.engine.suppress(seconds: 600, reason: "checkout"))
    #expect(
      changes == [
        .tip(TipState(id: "a.tip", status: .available, shouldDisplay: false)),
        .tip(TipState(id: "b.tip", status: .available, shouldDisplay: false)),
      ])
    #expect(h.engine.currentSuppression == Suppression(since: t0, until: t0 + 600, reason: "checkout"))
    #expect(h.engine.nextChangeTime() == t0 + 600)
    let explained = try h.engine.explain("a.tip")
    #expect(explained.json["heldBy"] == [["kind": "suppressed", "until": .int(Int64(t0) + 600), "reason": "checkout"]])
    h.advance(599)
    #expect(h.last.isEmpty)
    h.advance(1)
    #expect(h.shows("a.tip") && h.shows("b.tip"))
    #expect(h.engine.currentSuppression == nil)
    #expect(h.engine.snapshot().suppression == nil)
    #expect(h.engine.nextChangeTime() == nil)
  }

  @Test("it starts no cooldown, invalidates nothing, yields to testing overrides; a new one replaces the running one")
  func semantics() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .daily))
    try h.register(Self.tips[0])
    let mutation = try h.engine.suppress(seconds: nil, reason: nil)
    #expect(!mutation.writes.contains { if case .cooldown = $0 { true } else { false } })
    h.apply(mutation)
    #expect(!h.shows("a.tip") && h.status("a.tip") == .available)
    #expect(h.engine.nextChangeTime() == nil, "an open-ended suppression waits for resume")
    h.apply(h.engine.setTestingOverride(.show(["a.tip"])))
    #expect(h.shows("a.tip"))
    h.apply(h.engine.setTestingOverride(.clear))
    #expect(!h.shows("a.tip"))
    h.advance(10)
    h.apply(try h.engine.suppress(seconds: 5, reason: "modal"))
    #expect(h.engine.currentSuppression == Suppression(since: t0 + 10, until: t0 + 15, reason: "modal"))
    h.apply(h.engine.resume())
    #expect(h.shows("a.tip"))
    #expect(h.engine.resume().writes.isEmpty, "resuming when nothing is suppressed does nothing")
    #expect(throws: EngineError.invalidArgument(argument: "seconds", problem: "must be a positive number of seconds")) {
      try h.engine.suppress(seconds: 0, reason: nil)
    }
  }

  @Test("a restart finds the suppression running, or over (and cleared) when its end passed meanwhile")
  func restart() throws {
    let first = Harness()
    try first.register(Self.tips[0])
    first.apply(try first.engine.suppress(seconds: 3_600, reason: "call"))
    let stored = FakeStore.replaying(first.writes)
    #expect(stored.suppression == Suppression(since: t0, until: t0 + 3_600, reason: "call"))

    let during = Harness(now: t0 + 60, snapshot: stored)
    try during.register(Self.tips[0])
    #expect(!during.shows("a.tip"))
    #expect(during.engine.nextChangeTime() == t0 + 3_600)

    let after = Harness(now: t0 + 3_600, snapshot: stored)
    let registered = try after.engine.register([try tip(Self.tips[0])])
    #expect(registered.writes.contains(.suppression(nil)))
    after.apply(registered)
    #expect(after.shows("a.tip"))
  }
}
