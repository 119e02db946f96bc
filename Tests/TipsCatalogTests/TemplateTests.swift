import Testing
import TipsCatalog
import TipsEngine
import TipsJSON

@Suite struct Templates {
  static func template(_ json: String) throws -> TipTemplate {
    try TipTemplate(json: try JSONParser.parse(json), path: "templates[0]")
  }

  static let trail = """
    {"id": "trail.new.{trailId}", "title": "{trailName} is now available",
     "message": "Tap {region} on the map. {{Literal}} braces, {{{trailName}}}",
     "actions": [{"id": "go", "title": "Go to {trailName}"}],
     "rules": [{"event": "trail.viewed", "where": {"trailId": "{trailId}", "label": "trail {trailId}"},
                "within": {"days": 7}, "count": {"gte": 1}}],
     "metadata": {"{notAPlaceholder}": "{region}"}}
    """

  @Test func placeholdersAreSortedUniqueNamesFromStringValues() throws {
    let template = try Self.template(Self.trail)
    #expect(template.id == "trail.new.{trailId}")
    #expect(template.placeholders == ["region", "trailId", "trailName"])
  }

  @Test func instantiateSubstitutesEveryStringAndKeepsTypesOfWholePlaceholders() throws {
    let template = try Self.template(Self.trail)
    // (A bare number is not a feature.purpose segment, hence .any for this one.)
    let tip = try template.instantiate(
      values: ["trailId": 42, "trailName": "North Ridge", "region": "North"], idPattern: .any)
    #expect(tip.id == "trail.new.42")
    #expect(tip.title == "North Ridge is now available")
    #expect(tip.message == "Tap North on the map. {Literal} braces, {North Ridge}")
    #expect(tip.actions.first?.title == "Go to North Ridge")
    guard case .event(let rule) = tip.rules.first else {
      Issue.record("expected an event rule")
      return
    }
    // A string that is exactly "{trailId}" takes the value's type; embedded, it is rendered as text.
    #expect(rule.matching?["trailId"] == .int(42))
    #expect(rule.matching?["label"] == "trail 42")
    // Object keys are not substituted.
    #expect(tip.metadata?["{notAPlaceholder}"] == "North")
    let flags = try template.instantiate(values: ["trailId": "x", "trailName": true, "region": 1.5])
    #expect(flags.title == "true is now available")
    #expect(flags.message?.hasPrefix("Tap 1.5 on") == true)
  }

  @Test func sameValuesMakeTheSameID() throws {
    let template = try Self.template(Self.trail)
    let a = try template.instantiate(values: ["trailId": "north-ridge", "trailName": "N", "region": "North"])
    let b = try template.instantiate(values: ["region": "North", "trailName": "N", "trailId": "north-ridge"])
    #expect(a.id == "trail.new.north-ridge")
    #expect(a == b)
    let other = try template.instantiate(values: ["trailId": "south-ridge", "trailName": "N", "region": "North"])
    #expect(other.id != a.id)
  }

  @Test func missingExtraAndNonScalarValuesAreNamed() throws {
    let template = try Self.template(Self.trail)
    #expect(throws: EngineError.self) { try template.instantiate(values: ["trailId": 1, "region": "N"]) }
    do {
      _ = try template.instantiate(values: ["trailId": 1, "region": "N"])
    } catch {
      guard case .invalidArgument(let argument, let problem) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(argument == "values.trailName")
      #expect(problem.contains("missing"))
    }
    do {
      _ = try template.instantiate(values: ["trailId": 1, "trailName": "N", "region": "N", "colour": "red"])
      Issue.record("an extra value was accepted")
    } catch {
      guard case .invalidArgument(let argument, _) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(argument == "values.colour")
    }
    do {
      _ = try template.instantiate(values: ["trailId": [1, 2], "trailName": "N", "region": "N"])
      Issue.record("an array value was accepted")
    } catch {
      #expect(error == .invalidArgument(argument: "values.trailId", problem: "must be a string, number or boolean"))
    }
  }

  @Test func aValueMakingABadIDIsRejected() throws {
    let template = try Self.template(Self.trail)
    for bad: JSONValue in ["North Ridge", "", "UPPER", "a\u{1F}b"] {
      #expect(throws: EngineError.self, "\(bad)") {
        try template.instantiate(values: ["trailId": bad, "trailName": "N", "region": "N"])
      }
    }
    // Another id pattern lets the same value through.
    let lenient = try template.instantiate(
      values: ["trailId": "North-Ridge", "trailName": "N", "region": "N"], idPattern: .regex("[A-Za-z.-]+"))
    #expect(lenient.id == "trail.new.North-Ridge")
    // A value that breaks the definition (where must stay an object, count an integer) fails to decode.
    let counted = try Self.template(
      #"{"id": "a.{n}", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}], "image": "{n}"}"#)
    #expect(throws: EngineError.self) { try counted.instantiate(values: ["n": 3], idPattern: .any) }
  }

  @Test func malformedTemplates() throws {
    // No placeholder in the id.
    #expect(
      throws: EngineError.invalidDefinition(
        path: "templates[0].id", message: "a template id needs at least one placeholder, e.g. trail.new.{trailId}")
    ) {
      try Self.template(#"{"id": "trail.new", "title": "{x}"}"#)
    }
    // A stray brace, anywhere.
    #expect(throws: EngineError.self) { try Self.template(#"{"id": "t.{x}", "title": "a { b"}"#) }
    #expect(throws: EngineError.self) { try Self.template(#"{"id": "t.{x}", "title": "a } b"}"#) }
    #expect(throws: EngineError.self) { try Self.template(#"{"id": "t.{x y}", "title": "a"}"#) }
    // Unknown keys are found by decoding the sample instantiation.
    #expect(throws: EngineError.self) { try Self.template(#"{"id": "t.{x}", "title": "a", "colour": "red"}"#) }
    #expect(Templates.couldMake("trail.new.{trailId}", "trail.new.north"))
    #expect(!Templates.couldMake("trail.new.{trailId}", "trail.new."))
    #expect(Templates.couldMake("{a}.{b}", "x.y.z"))
    #expect(!Templates.couldMake("trail.{a}.tip", "trail.x.tips"))
  }

  static func couldMake(_ pattern: String, _ id: String) -> Bool {
    (try? template(#"{"id": "\#(pattern)", "title": "t"}"#))?.couldMake(id: id) ?? false
  }
}
