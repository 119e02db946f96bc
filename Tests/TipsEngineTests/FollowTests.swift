import Testing
import TipsEngine
import TipsJSON

@Suite("Tips that follow tips: rules on another tip's invalidation (for a while) or display count")
struct FollowTests {
  static let welcome = #"{"id": "welcome.tip", "title": "Welcome"}"#
  static let filterADayLater = """
    {"id": "filter.tip", "title": "Filter", "rules": [{"tip": "welcome.tip", "status": "invalidated", "for": {"days": 1}}]}
    """

  @Test("a day after the welcome tip was closed, exactly, the filter tip shows with no request")
  func aDayAfter() throws {
    let h = Harness()
    try h.register(Self.welcome, Self.filterADayLater)
    #expect(!h.shows("filter.tip"))
    #expect(h.engine.nextChangeTime() == nil)
    h.advance(10)
    h.apply(try h.engine.invalidate("welcome.tip", reason: .tipClosed))
    #expect(!h.shows("filter.tip"))
    #expect(h.engine.nextChangeTime() == t0 + 10 + 86_400)
    h.clock.set(t0 + 10 + 86_399)
    #expect(h.apply(h.engine.advanceTime()).isEmpty)
    h.clock.set(t0 + 10 + 86_400)
    #expect(
      h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "filter.tip", status: .available, shouldDisplay: true))])
    #expect(h.engine.nextChangeTime() == nil)
    let explained = try h.engine.explain("filter.tip")
    #expect(explained.json["rules"]?[0]?["holds"] == true)
    #expect(
      explained.json["rules"]?[0]?["detail"]?.stringValue?.contains("needs invalidated for at least 1 day") == true)
    // Eligibility reset on the welcome tip takes the filter tip back.
    h.apply(try h.engine.resetEligibility("welcome.tip"))
    #expect(!h.shows("filter.tip"))
  }

  @Test("without for, as soon as the tip is invalidated; displayed compares its display count")
  func immediateAndDisplayed() throws {
    let h = Harness()
    try h.register(
      Self.welcome,
      #"{"id": "next.tip", "title": "N", "rules": [{"tip": "welcome.tip", "status": "invalidated"}]}"#,
      #"{"id": "seen.tip", "title": "S", "rules": [{"tip": "welcome.tip", "displayed": {"gte": 2}}]}"#)
    h.apply(try h.engine.recordDisplay("welcome.tip"))
    #expect(!h.shows("seen.tip"))
    h.apply(try h.engine.recordDisplay("welcome.tip"))
    #expect(h.lastTipChanges == [TipState(id: "seen.tip", status: .available, shouldDisplay: true)])
    h.apply(try h.engine.invalidate("welcome.tip", reason: .actionPerformed))
    #expect(h.shows("next.tip"))
  }

  @Test("a rule naming a tip that is not registered never holds, until that tip registers; unregistering it undoes")
  func unknownTip() throws {
    let h = Harness()
    try h.register(#"{"id": "after.tip", "title": "A", "rules": [{"tip": "later.tip", "displayed": {"eq": 0}}]}"#)
    #expect(!h.shows("after.tip"))
    #expect(
      try h.engine.explain("after.tip").json["rules"]?[0]?["detail"]?.stringValue?.contains("is not registered") == true
    )
    try h.register(#"{"id": "later.tip", "title": "L"}"#)
    #expect(h.shows("after.tip"))
    h.apply(h.engine.unregister(["later.tip"]))
    #expect(!h.shows("after.tip"))
  }

  @Test("a cycle is refused at registration, in one batch or across batches, and nothing of the batch registers")
  func cycles() throws {
    let h = Harness()
    let a = try tip(#"{"id": "a.tip", "title": "A", "rules": [{"tip": "b.tip", "status": "invalidated"}]}"#)
    let b = try tip(#"{"id": "b.tip", "title": "B", "rules": [{"anyOf": [{"tip": "a.tip", "displayed": {"gt": 0}}]}]}"#)
    #expect(
      throws: EngineError.invalidDefinition(
        path: "tips[0].rules",
        message: "tips that follow tips form a cycle (a.tip → b.tip → a.tip): none of them could ever show")
    ) { try h.engine.register([a, b]) }
    #expect(h.engine.registeredTipIDs.isEmpty)
    h.apply(try h.engine.register([a]))
    #expect(throws: EngineError.self) { try h.engine.register([b]) }
    let selfish = try tip(#"{"id": "c.tip", "title": "C", "rules": [{"tip": "c.tip", "status": "invalidated"}]}"#)
    #expect(throws: EngineError.self) { try h.engine.register([selfish]) }
    // Replacing a.tip with a definition that no longer follows b.tip lets b.tip follow a.tip.
    h.apply(try h.engine.register([try tip(#"{"id": "a.tip", "title": "A"}"#), b]))
    #expect(h.engine.registeredTipIDs == ["a.tip", "b.tip"])
  }

  @Test("tip rules decode exactly, and refuse what they cannot mean")
  func decoding() throws {
    let rule = try rule(#"{"tip": "w", "status": "invalidated", "for": {"hours": 36}}"#)
    #expect(rule == .tip(TipRule(tipID: "w", condition: .invalidated(for: 129_600))))
    #expect(rule.json == ["tip": "w", "status": "invalidated", "for": ["hours": 36]])
    #expect(try Rule(json: rule.json, path: "r") == rule)
    func error(_ text: String) -> String? {
      decodingError(#"{"id": "t", "title": "T", "rules": [\#(text)]}"#)
    }
    #expect(error(#"{"tip": "w"}"#) == #"tips[2].rules[0]: a tip rule needs exactly one of "status" and "displayed""#)
    #expect(
      error(#"{"tip": "w", "status": "displayed"}"#)
        == #"tips[2].rules[0].status: expected "invalidated" (a tip rule follows a tip once it is done)"#)
    #expect(
      error(#"{"tip": "w", "displayed": {"gte": 1}, "for": {"days": 1}}"#)
        == #"tips[2].rules[0].for: "for" goes with "status": "invalidated", not with "displayed""#)
    #expect(
      error(#"{"tip": "w", "displayed": {"gte": -1}}"#)
        == "tips[2].rules[0].displayed.gte: expected a non-negative integer, got -1")
    #expect(
      error(#"{"tip": "w", "status": "invalidated", "count": {"gte": 1}}"#)
        == #"tips[2].rules[0]: unknown key "count" in a tip rule"#)
    #expect(error(#"{"tip": "w", "event": "e", "count": {"gte": 1}}"#)?.contains("exactly one of") == true)
  }
}
