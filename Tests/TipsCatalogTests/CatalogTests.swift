import Foundation
import Testing
import TipsCatalog
import TipsEngine
import TipsJSON

@Suite struct CatalogDecoding {
  @Test func demoDecodesWithEveryNewKey() throws {
    let catalog = try Catalog(path: Paths.demo, messagesDirectory: Paths.demoMessages)
    #expect(catalog.locales == ["en", "ja", "zh-Hans", "ko"])
    #expect(catalog.sourceLocale == "en")
    #expect(catalog.events?.first?.id == "search.opened")
    #expect(catalog.events?.first { $0.id == "trail.visited" }?.maxDonations == 500)
    #expect(
      catalog.tips.map { $0.id } == [
        "welcome.tour", "filter.tip", "advanced-search.tip", "show-location.tip", "rotate-map.tip",
      ])
    #expect(catalog.templates.map { $0.id } == ["trail.new.{trailId}"])
    #expect(catalog.groups.map { $0.id } == ["compass"])
    let filter = try #require(catalog.tips.first { $0.id == "filter.tip" })
    #expect(filter.variants.map { $0.name } == ["friendly", "direct"])
    #expect(filter.localizations["ja"]?.title == "もっと絞り込めます")
    // A variant inherits the tip's actions, and with them their translations.
    #expect(filter.withVariant("friendly").localized(for: "ja").actions.first?.title == "詳しく見る")
    #expect(filter.withVariant("direct").localized(for: "ko").title == "결과 필터링")
    // Template copy is translated too, placeholders and all.
    let trail = try #require(catalog.template("trail.new.{trailId}"))
    let tip = try trail.instantiate(values: ["trailId": "north-ridge", "trailName": "North Ridge", "region": "North"])
    #expect(tip.localized(for: "ja-JP").title == "North Ridgeが公開されました")
  }

  @Test func registerAppliesMaxDonations() throws {
    let catalog = try Catalog(
      json: try JSONParser.parse(
        #"{"events": [{"id": "a.opened", "description": "A", "maxDonations": 3}, {"id": "b.opened", "description": "B"}]}"#
      ))
    let engine = Engine(clock: VirtualClock(now: 1_000))
    let mutation = try catalog.register(in: engine)
    #expect(mutation.writes.contains(.donationLimit(eventID: "a.opened", limit: 3)))
    for _ in 0..<5 { _ = try engine.donate("a.opened") }
    #expect(engine.donationCount("a.opened") == 3)
    #expect(engine.lifetimeCount("a.opened") == 5)
  }

  @Test func registerAppliesMaxAgeAndTheNewKeysRoundTrip() throws {
    let text = """
      {"events": [{"id": "a.opened", "description": "A", "maxAge": {"days": 30}}],
       "tips": [{"id": "a.tip", "title": "A", "schedule": {"from": "2027-01-01T00:00:00Z"},
                 "rules": [{"tip": "b.tip", "status": "invalidated", "for": {"hours": 2}}],
                 "variants": {"on": {"title": "On", "weight": 3}, "off": {"holdout": true}}},
                {"id": "b.tip", "title": "B"}],
       "groups": [{"id": "g", "priority": "ordered", "tips": ["a.tip", "b.tip"], "schedule": {"until": "2028-01-01T00:00:00Z"}}]}
      """
    let catalog = try Catalog(json: try JSONParser.parse(text))
    #expect(catalog.events?.first?.maxAge == 2_592_000)
    #expect(catalog.events?.first?.json == ["id": "a.opened", "description": "A", "maxAge": ["days": 30]])
    #expect(catalog.groups.first?.schedule == TipSchedule(until: ISO8601.timestamp(from: "2028-01-01T00:00:00Z")))
    let engine = Engine(clock: VirtualClock(now: 1_000))
    let mutation = try catalog.register(in: engine)
    #expect(mutation.writes.contains(.donationMaxAge(eventID: "a.opened", seconds: 2_592_000)))
    #expect(engine.donationMaxAge("a.opened") == 2_592_000)
    #expect(
      throws: EngineError.invalidDefinition(path: "events[0].maxAge.days", message: "expected a positive number, got 0")
    ) {
      try Catalog(json: try JSONParser.parse(#"{"events": [{"id": "a", "description": "A", "maxAge": {"days": 0}}]}"#))
    }
  }

  @Test func strictDecodingNamesThePath() throws {
    func decode(_ text: String) -> EngineError? {
      do {
        _ = try Catalog(json: try JSONParser.parse(text))
        return nil
      } catch let error as EngineError {
        return error
      } catch {
        return nil
      }
    }
    #expect(
      decode(#"{"tips": [], "colour": 1}"#)
        == .invalidDefinition(
          path: "$",
          message:
            "unknown key \"colour\" (expected $schema, displayFrequency, parameters, events, locales, sourceLocale, tips, templates, groups)"
        ))
    #expect(
      decode(#"{"events": [{"id": "a"}]}"#)
        == .invalidDefinition(
          path: "events[0].description", message: "expected a non-empty string saying what the event means"))
    #expect(decode(#"{"events": [{"id": "a", "description": "A", "maxDonations": 0}]}"#) != nil)
    #expect(decode(#"{"events": [{"id": "a", "description": "A", "extra": 1}]}"#) != nil)
    #expect(
      decode(#"{"locales": ["en", "ja ja"]}"#)
        == .invalidDefinition(path: "locales[1]", message: "expected a locale tag such as \"ja\" or \"zh-Hans\""))
    #expect(decode(#"{"locales": ["ja"]}"#) != nil)  // the source locale (en) must be one of them
    #expect(decode(#"{"locales": ["ja"], "sourceLocale": "ja"}"#) == nil)
    #expect(
      decode(#"{"groups": [{"id": "g", "priority": "ordered", "tips": ["x"]}]}"#)
        == .invalidDefinition(path: "groups[0].tips[0]", message: "no tip \"x\" in this catalog"))
    #expect(decode(#"{"groups": [{"id": "g", "priority": "ordered", "tips": [], "extra": 1}]}"#) != nil)
    #expect(
      decode(#"{"tips": [{"id": "a", "title": "A"}, {"id": "a", "title": "B"}]}"#)
        == .invalidDefinition(path: "tips[1].id", message: "duplicate tip id \"a\" (first at tips[0])"))
    #expect(decode(#"{"templates": [{"id": "t", "title": "T"}]}"#) != nil)
    // Lint-only rules (the id pattern, the checklist) are not decoding errors: the old catalogs still load.
    #expect(
      decode(#"{"tips": [{"id": "a", "title": "A"}], "groups": [{"id": "g", "priority": "ordered", "tips": ["a"]}]}"#)
        == nil)
  }

  @Test func fileErrorsNameTheFileAndPath() throws {
    let directory = try writeFiles(["bad.json": #"{"tips": [{"id": "a", "title": 3}]}"#, "broken.json": "{"])
    defer { try? FileManager.default.removeItem(atPath: directory) }
    #expect(
      throws: CatalogError(
        file: "\(directory)/bad.json", path: "tips[0].title", message: "expected a string, got number")
    ) {
      try Catalog(path: "\(directory)/bad.json")
    }
    do {
      _ = try Catalog(path: "\(directory)/broken.json")
      Issue.record("accepted")
    } catch {
      #expect(error.description.hasPrefix("catalog \(directory)/broken.json: invalid JSON"))
    }
    #expect(throws: CatalogError.self) { try Catalog(path: "\(directory)/missing.json") }
  }

  @Test func idPatterns() throws {
    for id in ["filter.tip", "advanced-search.tip", "trail.new.north-ridge", "a1.b2"] {
      #expect(IDPattern.featurePurpose.matches(id), "\(id)")
    }
    for id in ["filter", "Filter.tip", "filter..tip", "filter.tip.", "1.tip", "filter.-tip", "NewTrailTip-1", "a_b.c"] {
      #expect(!IDPattern.featurePurpose.matches(id), "\(id)")
    }
    #expect(try IDPattern(parsing: "feature.purpose") == .featurePurpose)
    #expect(try IDPattern(parsing: "any") == .any)
    #expect(try IDPattern(parsing: "[A-Z][A-Za-z]+Tip(-[0-9]+)?").matches("NewTrailTip-42"))
    #expect(try !IDPattern(parsing: "[A-Z][A-Za-z]+Tip").matches("NewTrailTip-42"))
    #expect(throws: CatalogError.self) { try IDPattern(parsing: "(") }
  }
}
