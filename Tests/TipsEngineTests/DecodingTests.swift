import Testing
import TipsEngine
import TipsJSON

@Suite("Decoding definitions from JSON")
struct DecodingTests {
  @Test("a full tip definition decodes and encodes back to the same definition")
  func fullTipRoundTrip() throws {
    let definition = try tip(
      """
      {"id": "filter.tip", "title": "You can narrow this down", "message": "Use the filter.",
       "image": "line.3.horizontal.decrease.circle",
       "actions": [{"id": "learn-more", "title": "Learn more"}, {"id": "dismiss", "title": "Got it"}],
       "rules": [
         {"event": "search.opened", "count": {"gte": 3}},
         {"event": "filter.used", "count": {"eq": 0}},
         {"event": "search.opened", "within": {"days": 1}, "count": {"gte": 1}},
         {"event": "trail.visited", "where": {"region": "north"}, "count": {"gt": 3}},
         {"event": "trail.visited", "largestGroupBy": "region", "count": {"gte": 2}},
         {"parameter": "isLoggedIn", "eq": true},
         {"allOf": [{"parameter": "level", "gte": 2}, {"anyOf": [{"parameter": "name", "ne": "x"}]}]},
         {"not": {"event": "x", "within": {"minutes": 90}, "count": {"lt": 1}}}
       ],
       "options": {"maxDisplayCount": 3, "maxDisplayDuration": 120.5, "ignoresDisplayFrequency": true}}
      """)
    #expect(definition.id == "filter.tip")
    #expect(definition.message == "Use the filter.")
    #expect(definition.image == "line.3.horizontal.decrease.circle")
    #expect(
      definition.actions == [
        TipAction(id: "learn-more", title: "Learn more"), TipAction(id: "dismiss", title: "Got it"),
      ])
    #expect(
      definition.options == TipOptions(maxDisplayCount: 3, maxDisplayDuration: 120.5, ignoresDisplayFrequency: true))
    #expect(definition.rules.count == 8)
    #expect(
      definition.rules[0] == .event(EventRule(eventID: "search.opened", countOperator: .gte, countValue: 3)))
    #expect(
      definition.rules[2]
        == .event(EventRule(eventID: "search.opened", within: 86_400, countOperator: .gte, countValue: 1)))
    #expect(
      definition.rules[3]
        == .event(EventRule(eventID: "trail.visited", matching: ["region": "north"], countOperator: .gt, countValue: 3))
    )
    #expect(
      definition.rules[4]
        == .event(EventRule(eventID: "trail.visited", largestGroupBy: "region", countOperator: .gte, countValue: 2)))
    #expect(definition.rules[5] == .parameter(ParameterRule(parameterID: "isLoggedIn", op: .eq, value: true)))
    let again = try TipDefinition(json: definition.json, path: "again")
    #expect(again == definition)
  }

  @Test("a minimal tip has no message, image, actions, rules or options")
  func minimalTip() throws {
    let definition = try tip(#"{"id": "a", "title": ""}"#)
    #expect(definition == TipDefinition(id: "a", title: ""))
    #expect(definition.json == json(#"{"id":"a","title":"","actions":[],"rules":[],"options":{}}"#))
    let withNulls = try tip(#"{"id": "a", "title": "t", "message": null, "image": null, "options": null}"#)
    #expect(withNulls.message == nil && withNulls.image == nil)
  }

  @Test(
    "within units convert to seconds and encode in the largest exact unit",
    arguments: [
      (#"{"minutes": 90}"#, 5_400.0, #"{"minutes":90}"#),
      (#"{"minutes": 30}"#, 1_800.0, #"{"minutes":30}"#),
      (#"{"hours": 2}"#, 7_200.0, #"{"hours":2}"#),
      (#"{"days": 1}"#, 86_400.0, #"{"days":1}"#),
      (#"{"days": 14}"#, 1_209_600.0, #"{"weeks":2}"#),
      (#"{"weeks": 1}"#, 604_800.0, #"{"weeks":1}"#),
      (#"{"minutes": 0.5}"#, 30.0, #"{"minutes":0.5}"#),
    ])
  func withinUnits(within: String, seconds: Double, encoded: String) throws {
    let decoded = try rule(#"{"event": "e", "within": \#(within), "count": {"gte": 1}}"#)
    guard case .event(let event) = decoded else {
      Issue.record("not an event rule")
      return
    }
    #expect(event.within == seconds)
    #expect(decoded.json["within"] == json(encoded))
    #expect(try Rule(json: decoded.json, path: "x") == decoded)
  }

  @Test("every comparison operator decodes for counts and parameters", arguments: ComparisonOperator.allCases)
  func operators(op: ComparisonOperator) throws {
    let count = try rule(#"{"event": "e", "count": {"\#(op.rawValue)": 2}}"#)
    #expect(count == .event(EventRule(eventID: "e", countOperator: op, countValue: 2)))
    let parameter = try rule(#"{"parameter": "p", "\#(op.rawValue)": "x"}"#)
    #expect(parameter == .parameter(ParameterRule(parameterID: "p", op: op, value: "x")))
    #expect(try Rule(json: count.json, path: "r") == count)
    #expect(try Rule(json: parameter.json, path: "r") == parameter)
  }

  @Test("a count written as 3.0 is accepted as the integer 3")
  func integralDoubleCount() throws {
    #expect(
      try rule(#"{"event": "e", "count": {"gte": 3.0}}"#)
        == .event(EventRule(eventID: "e", countOperator: .gte, countValue: 3)))
  }

  static let ruleErrors: [(rule: String, message: String)] = [
    (
      #"{"event": "e", "count": {"gte ": 3}}"#,
      #"tips[2].rules[1].count: unknown operator "gte ""#
    ),
    (
      #"{"event": "e", "parameter": "p", "count": {"gte": 3}}"#,
      #"tips[2].rules[1]: rule must have exactly one of "event", "parameter", "tip", "allOf", "anyOf", "not""#
    ),
    (
      #"{"count": {"gte": 3}}"#,
      #"tips[2].rules[1]: rule must have exactly one of "event", "parameter", "tip", "allOf", "anyOf", "not""#
    ),
    (
      #"{"allOf": [], "not": {"event": "e", "count": {"eq": 0}}}"#,
      #"tips[2].rules[1]: rule must have exactly one of "event", "parameter", "tip", "allOf", "anyOf", "not""#
    ),
    (#"{"event": "e"}"#, #"tips[2].rules[1]: missing required key "count""#),
    (
      #"{"event": "e", "count": {"gte": 3, "lt": 5}}"#,
      #"tips[2].rules[1].count: expected exactly one operator ("eq", "ne", "lt", "lte", "gt", "gte")"#
    ),
    (
      #"{"event": "e", "count": {}}"#,
      #"tips[2].rules[1].count: expected exactly one operator ("eq", "ne", "lt", "lte", "gt", "gte")"#
    ),
    (#"{"event": "e", "count": 3}"#, "tips[2].rules[1].count: expected an object, got number"),
    (#"{"event": "e", "count": {"gte": -1}}"#, "tips[2].rules[1].count.gte: expected a non-negative integer, got -1"),
    (#"{"event": "e", "count": {"gte": 1.5}}"#, "tips[2].rules[1].count.gte: expected a non-negative integer, got 1.5"),
    (
      #"{"event": "e", "count": {"gte": "3"}}"#,
      #"tips[2].rules[1].count.gte: expected a non-negative integer, got string"#
    ),
    (
      #"{"event": "", "count": {"gte": 1}}"#, "tips[2].rules[1].event: expected a non-empty string, got an empty string"
    ),
    (#"{"event": 7, "count": {"gte": 1}}"#, "tips[2].rules[1].event: expected a non-empty string, got number"),
    (
      #"{"event": "e", "whre": {"a": 1}, "count": {"gte": 1}}"#,
      #"tips[2].rules[1]: unknown key "whre" in an event rule"#
    ),
    (
      #"{"event": "e", "within": {"day": 1}, "count": {"gte": 1}}"#,
      #"tips[2].rules[1].within: unknown unit "day""#
    ),
    (
      #"{"event": "e", "within": {"days": 1, "hours": 2}, "count": {"gte": 1}}"#,
      #"tips[2].rules[1].within: expected exactly one of "minutes", "hours", "days", "weeks""#
    ),
    (
      #"{"event": "e", "within": {}, "count": {"gte": 1}}"#,
      #"tips[2].rules[1].within: expected exactly one of "minutes", "hours", "days", "weeks""#
    ),
    (
      #"{"event": "e", "within": {"days": 0}, "count": {"gte": 1}}"#,
      "tips[2].rules[1].within.days: expected a positive number, got 0"
    ),
    (
      #"{"event": "e", "within": {"weeks": -2}, "count": {"gte": 1}}"#,
      "tips[2].rules[1].within.weeks: expected a positive number, got -2"
    ),
    (#"{"event": "e", "within": 5, "count": {"gte": 1}}"#, "tips[2].rules[1].within: expected an object, got number"),
    (
      #"{"event": "e", "where": "north", "count": {"gte": 1}}"#,
      "tips[2].rules[1].where: expected an object, got string"
    ),
    (
      #"{"event": "e", "largestGroupBy": "", "count": {"gte": 1}}"#,
      "tips[2].rules[1].largestGroupBy: expected a non-empty string, got an empty string"
    ),
    (
      #"{"parameter": "p", "eq": true, "ne": false}"#,
      #"tips[2].rules[1]: parameter rule must have exactly one operator ("eq", "ne", "lt", "lte", "gt", "gte")"#
    ),
    (
      #"{"parameter": "p"}"#,
      #"tips[2].rules[1]: parameter rule must have exactly one operator ("eq", "ne", "lt", "lte", "gt", "gte")"#
    ),
    (#"{"parameter": "p", "equals": true}"#, #"tips[2].rules[1]: unknown operator "equals""#),
    (#"{"parameter": "p", "eq": [1]}"#, "tips[2].rules[1].eq: expected a boolean, number or string, got array"),
    (#"{"parameter": "p", "eq": null}"#, "tips[2].rules[1].eq: expected a boolean, number or string, got null"),
    (#"{"parameter": "", "eq": 1}"#, "tips[2].rules[1].parameter: expected a non-empty string, got an empty string"),
    (#"{"allOf": {"event": "e"}}"#, "tips[2].rules[1].allOf: expected an array, got object"),
    (
      #"{"allOf": [{"event": "e", "count": {"eq": 0}}, {"not": {"event": "e", "count": {"eq ": 0}}}]}"#,
      #"tips[2].rules[1].allOf[1].not.count: unknown operator "eq ""#
    ),
    (
      #"{"anyOf": [{"parameter": "p", "eq": 1}], "extra": 1}"#,
      #"tips[2].rules[1]: unknown key "extra""#
    ),
    (#"{"not": [{"parameter": "p", "eq": 1}]}"#, "tips[2].rules[1].not: expected an object, got array"),
    ("3", "tips[2].rules[1]: expected an object, got number"),
    // Strings from the input are never echoed (a catalog may hold secrets): only their type.
    (
      #"{"event": "e", "count": {"gte": "sk_live_secret"}}"#,
      "tips[2].rules[1].count.gte: expected a non-negative integer, got string"
    ),
    (
      #"{"event": "e", "within": {"days": "sk_live_secret"}, "count": {"gte": 1}}"#,
      "tips[2].rules[1].within.days: expected a positive number, got string"
    ),
  ]

  @Test("rules may nest 32 levels deep, not 33")
  func nestingDepth() throws {
    func nested(_ levels: Int) -> String {
      String(repeating: #"{"not": "#, count: levels - 1) + #"{"event": "e", "count": {"gte": 1}}"#
        + String(repeating: "}", count: levels - 1)
    }
    _ = try rule(nested(Rule.maximumDepth))
    let message = decodingError(#"{"id": "t", "title": "T", "rules": [\#(nested(Rule.maximumDepth + 1))]}"#)
    #expect(message?.hasSuffix("rules nest more than 32 levels deep") == true, "\(message ?? "nil")")
  }

  @Test("malformed rules are rejected with a message naming the path", arguments: ruleErrors)
  func ruleError(rule: String, message: String) {
    let text = #"{"id": "t", "title": "T", "rules": [{"event": "ok", "count": {"gte": 1}}, \#(rule)]}"#
    #expect(decodingError(text) == message)
  }

  static let tipErrors: [(tip: String, message: String)] = [
    (#"{"id": "t", "titel": "T"}"#, #"tips[2]: unknown key "titel""#),
    (#"{"id": "t", "title": "T", "option": {}}"#, #"tips[2]: unknown key "option""#),
    (#"{"id": "t"}"#, #"tips[2]: missing required key "title""#),
    (#"{"title": "T"}"#, #"tips[2]: missing required key "id""#),
    (#"{"id": "", "title": "T"}"#, "tips[2].id: expected a non-empty string, got an empty string"),
    (#"{"id": 12, "title": "T"}"#, "tips[2].id: expected a non-empty string, got number"),
    (#"{"id": "t", "title": 1}"#, "tips[2].title: expected a string, got number"),
    (#"{"id": "t", "title": "T", "message": 1}"#, "tips[2].message: expected a string, got number"),
    (#"{"id": "t", "title": "T", "image": true}"#, "tips[2].image: expected a string, got boolean"),
    (#"[1]"#, "tips[2]: expected an object, got array"),
    (#"{"id": "t", "title": "T", "actions": {"id": "a"}}"#, "tips[2].actions: expected an array, got object"),
    (
      #"{"id": "t", "title": "T", "actions": [{"id": "ok", "title": "OK"}, {"id": "ok", "title": "Again"}]}"#,
      #"tips[2].actions[1].id: duplicate action id "ok""#
    ),
    (#"{"id": "t", "title": "T", "actions": [{"title": "OK"}]}"#, #"tips[2].actions[0]: missing required key "id""#),
    (
      #"{"id": "t", "title": "T", "actions": [{"id": "", "title": "OK"}]}"#,
      "tips[2].actions[0].id: expected a non-empty string, got an empty string"
    ),
    (
      #"{"id": "t", "title": "T", "actions": [{"id": "a", "title": "OK", "url": "x"}]}"#,
      #"tips[2].actions[0]: unknown key "url""#
    ),
    (#"{"id": "t", "title": "T", "rules": {}}"#, "tips[2].rules: expected an array, got object"),
    (
      #"{"id": "t", "title": "T", "options": {"maxDisplayCount": 0}}"#,
      "tips[2].options.maxDisplayCount: expected an integer of at least 1"
    ),
    (
      #"{"id": "t", "title": "T", "options": {"maxDisplayCount": 1.5}}"#,
      "tips[2].options.maxDisplayCount: expected an integer of at least 1"
    ),
    (
      #"{"id": "t", "title": "T", "options": {"maxDisplayDuration": 0}}"#,
      "tips[2].options.maxDisplayDuration: expected a positive number of seconds"
    ),
    (
      #"{"id": "t", "title": "T", "options": {"maxDisplayDuration": -5}}"#,
      "tips[2].options.maxDisplayDuration: expected a positive number of seconds"
    ),
    (
      #"{"id": "t", "title": "T", "options": {"ignoresDisplayFrequency": "yes"}}"#,
      "tips[2].options.ignoresDisplayFrequency: expected a boolean, got string"
    ),
    (
      #"{"id": "t", "title": "T", "options": {"maxDisplayCounts": 2}}"#,
      #"tips[2].options: unknown key "maxDisplayCounts""#
    ),
  ]

  @Test("a goal names its event and window (24 hours unless given) and encodes back")
  func goal() throws {
    let definition = try tip(#"{"id": "t", "title": "T", "goal": {"event": "filter.used", "within": {"hours": 48}}}"#)
    #expect(definition.goal == TipGoal(eventID: "filter.used", within: 172_800))
    #expect(definition.json["goal"] == json(#"{"event":"filter.used","within":{"days":2}}"#))
    #expect(try TipDefinition(json: definition.json, path: "again") == definition)
    #expect(
      try tip(#"{"id": "t", "title": "T", "goal": {"event": "x"}}"#).goal == TipGoal(eventID: "x", within: 86_400))
    #expect(try tip(#"{"id": "t", "title": "T", "goal": null}"#).goal == nil)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "goal": {"within": {"hours": 1}}}"#)
        == #"tips[2].goal: missing required key "event""#)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "goal": {"event": "x", "hours": 1}}"#)
        == #"tips[2].goal: unknown key "hours""#)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "goal": {"event": "x", "within": {"hours": 0}}}"#)
        == "tips[2].goal.within.hours: expected a positive number, got 0")
    #expect(
      decodingError(#"{"id": "t", "title": "T", "goal": {"event": ""}}"#)
        == "tips[2].goal.event: expected a non-empty string, got an empty string")
  }

  @Test("malformed tips are rejected with a message naming the path", arguments: tipErrors)
  func tipError(tip: String, message: String) {
    #expect(decodingError(tip) == message)
  }

  @Test("the error names the path the caller gave")
  func pathIsTheCallers() {
    #expect(decodingError(#"{"id": "t"}"#, path: "params.tips[0]") == #"params.tips[0]: missing required key "title""#)
    #expect(decodingError(#"{"id": "t"}"#, path: "") == #"$: missing required key "title""#)
    #expect(
      decodingError(#"{"id": "t", "title": "T", "rules": [{"event": "e", "count": {"gte ": 1}}]}"#, path: "")
        == #"rules[0].count: unknown operator "gte ""#)
  }

  @Test("parameter definitions decode with an optional transient flag")
  func parameterDefinitions() throws {
    let plain = try ParameterDefinition(json: json(#"{"id": "isLoggedIn", "default": false}"#), path: "p")
    #expect(plain == ParameterDefinition(id: "isLoggedIn", defaultValue: false))
    let transient = try ParameterDefinition(json: json(#"{"id": "n", "default": 1.5, "transient": true}"#), path: "p")
    #expect(transient == ParameterDefinition(id: "n", defaultValue: .double(1.5), transient: true))
    #expect(try ParameterDefinition(json: transient.json, path: "p") == transient)

    func error(_ text: String) -> String? {
      do {
        _ = try ParameterDefinition(json: json(text), path: "parameters[1]")
        return nil
      } catch { return error.description }
    }
    #expect(error(#"{"id": "p"}"#) == #"parameters[1]: missing required key "default""#)
    #expect(
      error(#"{"id": "p", "default": null}"#) == "parameters[1].default: expected a boolean, number or string, got null"
    )
    #expect(
      error(#"{"id": "p", "default": {}}"#) == "parameters[1].default: expected a boolean, number or string, got object"
    )
    #expect(
      error(#"{"id": "p", "default": 1, "transient": 1}"#) == "parameters[1].transient: expected a boolean, got number")
    #expect(error(#"{"id": "p", "default": 1, "persist": true}"#) == #"parameters[1]: unknown key "persist""#)
    #expect(error(#"{"id": "", "default": 1}"#) == "parameters[1].id: expected a non-empty string, got an empty string")
  }

  @Test("group definitions decode")
  func groupDefinitions() throws {
    let group = try TipGroupDefinition(
      json: json(#"{"id": "compass", "priority": "ordered", "tips": ["a", "b"]}"#), path: "g")
    #expect(group == TipGroupDefinition(id: "compass", priority: .ordered, tipIDs: ["a", "b"]))
    #expect(try TipGroupDefinition(json: group.json, path: "g") == group)
    #expect(
      throws: EngineError.invalidDefinition(
        path: "g.priority", message: #"unknown priority "first" (expected "ordered" or "firstAvailable")"#)
    ) {
      try TipGroupDefinition(json: json(#"{"id": "x", "priority": "first", "tips": []}"#), path: "g")
    }
    #expect(
      throws: EngineError.invalidDefinition(path: "g.tips[1]", message: "expected a non-empty string, got number")
    ) {
      try TipGroupDefinition(json: json(#"{"id": "x", "priority": "ordered", "tips": ["a", 2]}"#), path: "g")
    }
  }

  @Test("errors describe themselves")
  func errorDescriptions() {
    #expect(EngineError.unknownTip("a").description == #"unknown tip "a""#)
    #expect(EngineError.unknownGroup("g").description == #"unknown group "g""#)
    #expect(EngineError.unknownParameter("p").description == #"unknown parameter "p""#)
    #expect(
      EngineError.parameterTypeMismatch(id: "p", expected: "bool", got: "string").description
        == #"parameter "p" is declared bool, got string"#)
    #expect(EngineError.invalidDefinition(path: "tips[0]", message: "bad").description == "tips[0]: bad")
    #expect(
      EngineError.invalidArgument(argument: "duration", problem: "must be positive").description
        == "duration must be positive")
  }

  @Test("statuses have names and reasons, and states encode as JSON")
  func statusNames() {
    #expect(TipStatus.pending.name == "pending" && TipStatus.pending.reason == nil)
    #expect(TipStatus.available.name == "available" && TipStatus.available.reason == nil)
    #expect(TipStatus.invalidated(.tipClosed).name == "invalidated")
    #expect(TipStatus.invalidated(.tipClosed).reason == .tipClosed)
    let state = TipState(id: "a", status: .invalidated(.actionPerformed), shouldDisplay: false)
    #expect(state.json == json(#"{"id":"a","status":"invalidated","reason":"actionPerformed","shouldDisplay":false}"#))
  }
}
