import Testing
import TipsEngine
import TipsJSON

@Suite("Explain")
struct ExplainTests {
  @Test("each rule with its value and numbers, and the next change")
  func rules() throws {
    let h = Harness()
    try h.register(ScenarioTests.filterTip())
    h.donate("search.opened", times: 2)
    let explanation = try h.engine.explain("filter.tip")
    let object = try #require(explanation.json.objectValue)
    #expect(object["id"] == "filter.tip")
    #expect(object["status"] == "pending")
    #expect(object["reason"] == nil)
    #expect(object["shouldDisplay"] == false)
    let rules = try #require(object["rules"]?.arrayValue)
    #expect(rules.count == 3)
    #expect(rules[0]["rule"] == json(#"{"event":"search.opened","count":{"gte":3}}"#))
    #expect(rules[0]["holds"] == false)
    #expect(rules[0]["reads"] == "lifetime")
    #expect(rules[2]["reads"] == "history")
    #expect(rules[0]["detail"] == "search.opened count=2 (lifetime), needs >= 3")
    #expect(rules[1]["detail"] == "filter.used count=0 (lifetime), needs == 0")
    #expect(rules[1]["holds"] == true)
    #expect(rules[2]["detail"] == "search.opened count=2 within 1 day (of the newest 1000), needs >= 1")
    #expect(object["heldBy"] == [])
    #expect(object["displayCount"] == 0)
    #expect(object["displayedDuration"] == 0)
    #expect(object["nextChangeAt"] == JSONValue.int(Int64(t0) + 86_400))
    #expect(
      explanation.lines == [
        "filter.tip: pending, shouldDisplay false",
        "  rules: 2 of 3 hold",
        "  [no] search.opened count=2 (lifetime), needs >= 3",
        "  [ok] filter.used count=0 (lifetime), needs == 0",
        "  [ok] search.opened count=2 within 1 day (of the newest 1000), needs >= 1",
        "  displays: 0, displayed 0s",
        "  next change: 2023-11-15T22:13:20Z",
      ])
  }

  @Test("nested rules, filters, groups and parameters are explained")
  func nested() throws {
    let h = Harness()
    h.apply(try h.engine.defineParameters([ParameterDefinition(id: "level", defaultValue: 1)]))
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"anyOf": [{"parameter": "level", "gte": 2}, {"not": {"event": "v", "where": {"r": "n"}, "count": {"gt": 0}}}]}, {"event": "v", "largestGroupBy": "r", "within": {"hours": 3}, "count": {"gte": 1}}, {"parameter": "ghost", "eq": "x"}]}"#
    )
    h.donate("v", ["r": "n"])
    let explanation = try h.engine.explain("a")
    let rules = try #require(explanation.json["rules"]?.arrayValue)
    #expect(rules[0]["detail"] == "anyOf: 0 of 2 hold, needs at least one")
    #expect(rules[0]["rules"]?[0]?["detail"] == "parameter level=1, needs >= 2")
    #expect(rules[0]["rules"]?[1]?["detail"] == "not: the inner rule holds")
    #expect(
      rules[0]["rules"]?[1]?["rules"]?[0]?["detail"] == #"v count=1 where {"r":"n"} (of the newest 1000), needs > 0"#)
    #expect(rules[1]["detail"] == "v count=1 within 3 hours largest group by r (of the newest 1000), needs >= 1")
    #expect(rules[2]["detail"] == #"parameter ghost=null (undefined), needs == "x""#)
    #expect(rules[2]["holds"] == false)
    #expect(explanation.lines.contains("      [ok] v count=1 where {\"r\":\"n\"} (of the newest 1000), needs > 0"))
  }

  @Test("what holds a tip back: cooldown, group, override, invalidation")
  func heldBy() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .daily))
    try h.register(
      #"{"id": "shown", "title": "S"}"#, #"{"id": "first", "title": "F"}"#, #"{"id": "second", "title": "2"}"#,
      #"{"id": "closed", "title": "C", "options": {"maxDisplayCount": 5}}"#)
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["shown", "second"])))
    h.apply(try h.engine.recordDisplay("shown", duration: 2))
    h.apply(try h.engine.invalidate("closed", reason: .tipClosed))

    let cooldown = try h.engine.explain("first").json
    #expect(cooldown["heldBy"] == [["kind": "cooldown", "until": .int(Int64(t0) + 86_400)]])
    #expect(cooldown["nextChangeAt"] == .int(Int64(t0) + 86_400))

    let grouped = try h.engine.explain("second")
    #expect(
      grouped.json["heldBy"] == [
        ["kind": "cooldown", "until": .int(Int64(t0) + 86_400)],
        ["kind": "group", "group": "g", "currentTip": "shown"],
      ])
    #expect(grouped.lines.contains("  held by: group g (ordered, current tip shown)"))

    let closed = try h.engine.explain("closed")
    #expect(closed.json["status"] == "invalidated")
    #expect(closed.json["reason"] == "tipClosed")
    #expect(closed.json["heldBy"] == [["kind": "invalidated", "reason": "tipClosed"]])
    #expect(closed.lines.first == "closed: invalidated (tipClosed), shouldDisplay false")
    #expect(closed.lines.contains("  displays: 0 of 5, displayed 0s"))

    let shown = try h.engine.explain("shown")
    #expect(shown.json["heldBy"] == [])
    #expect(shown.json["displayCount"] == 1)
    #expect(shown.json["displayedDuration"] == 2)
    #expect(shown.json["shouldDisplay"] == true)
    #expect(shown.json["nextChangeAt"] == .null)

    h.apply(h.engine.setTestingOverride(.hideAll))
    #expect(try h.engine.explain("shown").json["heldBy"] == [["kind": "override", "override": "hideAll"]])
    h.apply(h.engine.setTestingOverride(.show(["closed"])))
    let overridden = try h.engine.explain("closed").json
    #expect(overridden["override"] == "show")
    #expect(overridden["heldBy"] == [])
    #expect(overridden["status"] == "available")
  }
}

@Suite("ISO 8601")
struct ISO8601Tests {
  @Test(
    "instants format as UTC civil time",
    arguments: [
      (0.0, "1970-01-01T00:00:00Z"), (-1.0, "1969-12-31T23:59:59Z"), (951_782_400.5, "2000-02-29T00:00:00Z"),
      (1_700_000_000, "2023-11-14T22:13:20Z"), (4_102_444_799, "2099-12-31T23:59:59Z"),
    ])
  func format(timestamp: Double, expected: String) {
    #expect(ISO8601.string(from: timestamp) == expected)
  }
}
