import Foundation
import Testing

@testable import TipsCatalog

/// What a check's failing fixture must report: the check, the JSON path and the line (lines are those of the
/// fixture files, written so the offending value sits on a known line).
struct FixtureExpectation: Sendable, CustomTestStringConvertible {
  var check: LintCheck
  var path: String
  var line: Int
  /// The file the diagnostic names, relative to the fixtures (nil: the catalog itself).
  var file: String?

  var testDescription: String { check.rawValue }
}

@Suite struct LintChecks {
  static let expectations: [FixtureExpectation] = [
    .init(check: .json, path: "$", line: 4),
    .init(check: .duplicateKey, path: "tips[0].title", line: 5),
    .init(check: .decode, path: "tips[1].title", line: 5),
    .init(check: .duplicateID, path: "tips[1].id", line: 5),
    .init(check: .idPattern, path: "tips[0].id", line: 4),
    .init(check: .unknownTip, path: "groups[0].tips[1]", line: 7),
    .init(check: .undeclaredEvent, path: "tips[0].rules[0].event", line: 5),
    .init(check: .impossibleRule, path: "tips[0].rules[0].count.lt", line: 5),
    .init(check: .template, path: "templates[0].id", line: 7),
    .init(check: .missingCopy, path: "tips[0].title", line: 6),
    .init(check: .messages, path: "tipkit.a.tip.title", line: 3, file: "messages-fail.messages/ja.json"),
    .init(check: .eventsUndeclared, path: "$", line: 1),
    .init(check: .noTimeRule, path: "tips[0].rules", line: 5),
    .init(check: .noRemoval, path: "tips[0]", line: 4),
    .init(check: .noSync, path: "tips[0]", line: 4),
    .init(check: .noInvalidatePath, path: "tips[0].actions[0].invalidate", line: 5),
    .init(check: .unusedEvent, path: "events[1].id", line: 4),
    .init(
      check: .extraMessageKey, path: "tipkit.nope.tip.title", line: 4, file: "extra-message-key-fail.messages/ja.json"),
    .init(check: .extraLocale, path: "$", line: 1, file: "extra-locale-fail.messages/fr.json"),
    .init(check: .tooManyVariants, path: "tips[0].variants", line: 5),
    .init(check: .followCycle, path: "tips[0].rules[1].tip", line: 5),
    .init(check: .schedule, path: "tips[0].schedule", line: 5),
    .init(check: .holdout, path: "tips[0].variants.control", line: 5),
    .init(check: .holdoutWithoutGoal, path: "tips[0].variants.control", line: 5),
  ]

  /// Lints `<check>-<kind>.json`, with `<check>-<kind>.messages/` when the fixture has one.
  static func lintFixture(_ check: LintCheck, _ kind: String) -> CatalogReport {
    let base = Paths.fixture("\(check.rawValue)-\(kind)")
    let messages = FileManager.default.fileExists(atPath: "\(base).messages") ? "\(base).messages" : nil
    return CatalogLoader.load(path: "\(base).json", messagesDirectory: messages)
  }

  @Test func everyCheckHasAFailingAndAPassingFixture() {
    let covered = Set(Self.expectations.map { $0.check })
    // `io` is an unreadable file: no fixture can be one (see unreadableFiles).
    #expect(covered == Set(LintCheck.allCases).subtracting([.io]))
    for check in covered {
      for kind in ["fail", "pass"] {
        #expect(
          FileManager.default.fileExists(atPath: Paths.fixture("\(check.rawValue)-\(kind).json")), "\(check) \(kind)")
      }
    }
  }

  @Test(arguments: expectations) func failingFixtureReportsTheCheck(_ expected: FixtureExpectation) throws {
    let report = Self.lintFixture(expected.check, "fail")
    let found = report.of(expected.check)
    let file = expected.file.map { Paths.fixture($0) } ?? Paths.fixture("\(expected.check.rawValue)-fail.json")
    let match = try #require(found.first { $0.path == expected.path }, "\(report.diagnostics)")
    #expect(match.file == file)
    #expect(match.line == expected.line)
    #expect(match.column != nil)
    #expect(match.severity == expected.check.severity)
    #expect(report.exitStatus == (expected.check.severity == .error ? 1 : 0))
    #expect((report.catalog == nil) == (expected.check.severity == .error))
  }

  @Test(arguments: expectations) func passingFixtureHasNoSuchDiagnostic(_ expected: FixtureExpectation) {
    let report = Self.lintFixture(expected.check, "pass")
    #expect(report.of(expected.check).isEmpty, "\(report.diagnostics)")
    #expect(report.diagnostics.isEmpty, "\(report.diagnostics)")
    #expect(report.catalog != nil)
  }

  @Test func unreadableFiles() {
    let report = CatalogLoader.load(path: Paths.fixture("no-such-catalog.json"))
    #expect(report.of(.io).count == 1)
    #expect(report.of(.io).first?.path == "$")
    #expect(report.exitStatus == 1)
    let messages = CatalogLoader.load(
      path: Paths.fixture("json-pass.json"), messagesDirectory: Paths.fixture("no-such-dir"))
    #expect(messages.of(.io).count == 1)
  }

  @Test func didYouMeanFindsTheNearMiss() throws {
    #expect(Linter.nearest("serach.opened", among: ["filter.used", "search.opened"]) == "search.opened")
    #expect(Linter.nearest("search.opend", among: ["search.opened"]) == "search.opened")
    #expect(Linter.nearest("checkout.done", among: ["search.opened", "filter.used"]) == nil)
    #expect(Linter.editDistance(Array("ab".unicodeScalars), Array("ba".unicodeScalars)) == 1)
    let report = Self.lintFixture(.undeclaredEvent, "fail")
    let message = try #require(report.of(.undeclaredEvent).first?.message)
    #expect(message.contains("did you mean \"search.opened\"?"))
  }

  /// One broken element hides nothing: every tip, template, group and event is decoded on its own.
  @Test func everyProblemIsReportedNotJustTheFirst() throws {
    let report = try lint(
      """
      {\(declaredEvents.dropLast()), {"id": 3, "description": "x"}],
       "tips": [
         {"id": "a.tip", "title": 1},
         \(cleanTip("b.tip", #""colour": "red""#)),
         \(cleanTip("Bad_Id")),
         \(cleanTip("c.tip"))
       ],
       "templates": [{"id": "x.{y}", "title": "{"}],
       "groups": [{"id": "g", "priority": "sometimes", "tips": []}],
       "surprise": true}
      """)
    let paths = Set(report.errors.map { "\($0.check) \($0.path)" })
    #expect(paths.contains("decode tips[0].title"))
    #expect(paths.contains("decode tips[1]"))
    #expect(paths.contains("id-pattern tips[2].id"))
    #expect(paths.contains("template templates[0].title"))
    #expect(paths.contains("decode groups[0].priority"))
    #expect(paths.contains("decode events[1].id"))
    #expect(paths.contains("decode $"))
    // An unknown key points at the key itself.
    let unknown = try #require(report.errors.first { $0.path == "tips[1]" })
    #expect(unknown.message.contains("unknown key \"colour\""))
    #expect(unknown.line == 5)
    #expect(report.catalog == nil)
  }

  @Test func contradictoryRulesOnOneEvent() throws {
    func rules(_ rules: String) throws -> [Diagnostic] {
      try lint(
        #"{\#(declaredEvents), "tips": [\#(cleanTip("a.tip", "\"options\": {}")), {"id": "b.tip", "title": "B", "removal": "r", "sync": "local", "rules": \#(rules)}]}"#
      )
      .of(.impossibleRule)
    }
    let window = #""within": {"days": 1}"#
    // Top-level rules are an implicit allOf.
    let topLevel = try rules(
      #"[{"event": "a.opened", \#(window), "count": {"gte": 5}}, {"event": "a.opened", "within": {"hours": 24}, "count": {"lte": 2}}]"#
    )
    #expect(topLevel.map { $0.path } == ["tips[1].rules[1].count"])
    #expect(topLevel.first?.message.contains("contradicts tips[1].rules[0]") == true)
    // Inside an allOf, nested in the top-level list.
    let nested = try rules(
      #"[{"event": "a.opened", \#(window), "count": {"gte": 1}}, {"allOf": [{"event": "a.opened", \#(window), "count": {"eq": 3}}, {"event": "a.opened", \#(window), "count": {"ne": 3}}]}]"#
    )
    #expect(nested.map { $0.path } == ["tips[1].rules[1].allOf[1].count"])
    // Different windows, filters or branches of an anyOf do not contradict; nor does anything under a not.
    #expect(
      try rules(
        #"[{"event": "a.opened", "within": {"days": 7}, "count": {"gte": 5}}, {"event": "a.opened", \#(window), "count": {"lte": 2}}]"#
      ).isEmpty)
    #expect(
      try rules(
        #"[{"event": "a.opened", \#(window), "where": {"r": "n"}, "count": {"gte": 5}}, {"event": "a.opened", \#(window), "count": {"lte": 2}}]"#
      ).isEmpty)
    #expect(
      try rules(
        #"[{"anyOf": [{"event": "a.opened", \#(window), "count": {"gte": 5}}, {"event": "a.opened", \#(window), "count": {"lte": 2}}]}]"#
      ).isEmpty)
    #expect(
      try rules(
        #"[{"event": "a.opened", \#(window), "count": {"gte": 1}}, {"not": {"event": "a.opened", \#(window), "count": {"lt": 0}}}]"#
      ).isEmpty)
  }

  @Test func windowsAndThresholdsThatCanNeverHold() throws {
    func check(_ rule: String, events: String = declaredEvents) throws -> [Diagnostic] {
      try lint(
        #"{\#(events), "tips": [{"id": "a.tip", "title": "A", "removal": "r", "sync": "local", "rules": [\#(rule)]}]}"#
      )
      .of(.impossibleRule)
    }
    // A zero window: the engine rejects it too, reported once.
    let zero = try lint(
      #"{\#(declaredEvents), "tips": [{"id": "a.tip", "title": "A", "rules": [{"event": "a.opened", "within": {"days": 0}, "count": {"gte": 1}}]}]}"#
    )
    #expect(zero.of(.impossibleRule).map { $0.path } == ["tips[0].rules[0].within.days"])
    #expect(zero.of(.decode).isEmpty)
    // Windowed, where and largestGroupBy counts read the bounded history (1000 by default); a plain count reads
    // the lifetime count.
    #expect(
      try check(#"{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1001}}"#).map { $0.path } == [
        "tips[0].rules[0].count.gte"
      ])
    #expect(try check(#"{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1000}}"#).isEmpty)
    #expect(try check(#"{"event": "a.opened", "where": {"r": "n"}, "count": {"gt": 1000}}"#).count == 1)
    #expect(try check(#"{"event": "a.opened", "largestGroupBy": "r", "count": {"eq": 1001}}"#).count == 1)
    #expect(
      try check(
        #"{"event": "a.opened", "count": {"gte": 5000}}, {"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}"#
      ).isEmpty)
    // A declared maxDonations moves the bound.
    let raised = #""events": [{"id": "a.opened", "description": "A", "maxDonations": 2000}]"#
    #expect(try check(#"{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1500}}"#, events: raised).isEmpty)
    let lowered = #""events": [{"id": "a.opened", "description": "A", "maxDonations": 10}]"#
    #expect(
      try check(#"{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 11}}"#, events: lowered).count == 1)
    // A negative count (the engine rejects it too) that can never hold is reported once, as impossible.
    let negative = try lint(
      #"{\#(declaredEvents), "tips": [{"id": "a.tip", "title": "A", "rules": [{"event": "a.opened", "count": {"lte": -1}}]}]}"#
    )
    #expect(negative.of(.impossibleRule).map { $0.path } == ["tips[0].rules[0].count.lte"])
    #expect(negative.of(.decode).isEmpty)
    // count lt 0 anywhere but under a not.
    #expect(try check(#"{"anyOf": [{"event": "a.opened", "within": {"days": 1}, "count": {"lt": 0}}]}"#).count == 1)
  }

  @Test func templateEventsAndIDs() throws {
    let events =
      #""events": [{"id": "trail.north.visited", "description": "N"}, {"id": "map.opened", "description": "M"}]"#
    func template(_ id: String, event: String) -> String {
      #"{"id": "\#(id)", "title": "New: {name}", "removal": "r", "sync": "local", "rules": [{"event": "\#(event)", "within": {"days": 1}, "count": {"gte": 1}}]}"#
    }
    // An event pattern is matched against the declared events (and counts as using them).
    let matched = try lint(
      #"{\#(events), "tips": [\#(template("map.tip", event: "map.opened").replacingOccurrences(of: "{name}", with: "x"))], "templates": [\#(template("trail.new.{trailId}", event: "trail.{region}.visited"))]}"#
    )
    #expect(matched.diagnostics.isEmpty, "\(matched.diagnostics)")
    let unmatched = try lint(
      #"{\#(events), "templates": [\#(template("trail.new.{trailId}", event: "hike.{region}.done"))]}"#)
    #expect(unmatched.of(.undeclaredEvent).map { $0.path } == ["templates[0].rules[0].event"])
    // Template ids follow the id pattern with each placeholder as its name in lowercase.
    let camel = try lint(#"{\#(events), "templates": [\#(template("Trail.{trailId}", event: "map.opened"))]}"#)
    #expect(camel.of(.idPattern).map { $0.path } == ["templates[0].id"])
    // A template that could make a tip's id clashes with it.
    let clash = try lint(
      #"{\#(events), "tips": [\#(template("trail.new.north", event: "map.opened").replacingOccurrences(of: "{name}", with: "x"))], "templates": [\#(template("trail.new.{trailId}", event: "map.opened"))]}"#
    )
    #expect(clash.of(.duplicateID).map { $0.path } == ["templates[0].id"])
  }

  /// Diagnostics quote ids and keys, never copy: they are logged by the daemon.
  @Test func diagnosticsNeverQuoteCopy() throws {
    let secret = "SECRET-unreleased-copy"
    let report = try lint(
      """
      {"locales": ["en", "ja"], "events": [{"id": "a.opened", "description": "\(secret)"}],
       "tips": [{"id": "Bad", "title": "\(secret)", "message": "\(secret)", "image": 3,
                 "actions": [{"id": "go", "title": "\(secret)", "invalidate": false}],
                 "rules": [{"event": "a.opened", "count": {"gte": "\(secret)"}}]},
                {"id": "b.tip", "title": "\(secret)", "message": "\(secret)",
                 "actions": [{"id": "go", "title": "\(secret)", "invalidate": false}],
                 "rules": [{"event": "a.opend", "where": {"k": "\(secret)"}, "within": {"days": 1}, "count": {"gte": 5000}}]}],
       "templates": [{"id": "t.{x}", "title": "\(secret) {x} {", "metadata": {"k": "\(secret)"}}]}
      """,
      messages: [
        "ja": #"{"tipkit": {"b.tip.title": "\#(secret)", "b.tip.variants.v.title": "\#(secret)", "z.title": 1}}"#
      ])
    #expect(report.diagnostics.count > 8)
    for format in ReportFormat.allCases {
      #expect(!report.rendered(format).contains("SECRET"), "\(format)")
    }
  }
}

@Suite struct GoalEvents {
  @Test func aGoalReadsItsEventLikeARule() throws {
    let events = #""events": [{"id": "a.opened", "description": "A"}, {"id": "a.used", "description": "B"}]"#
    // A declared event read only by a goal is used; a goal naming an undeclared event is caught with a suggestion.
    let used = try lint("{\(events), \"tips\": [\(cleanTip("a.tip", #""goal": {"event": "a.used"}"#))]}")
    #expect(used.of(.unusedEvent).isEmpty)
    #expect(used.errors.isEmpty)
    let typo = try lint("{\(events), \"tips\": [\(cleanTip("a.tip", #""goal": {"event": "a.usde"}"#))]}")
    let undeclared = typo.of(.undeclaredEvent)
    #expect(undeclared.map { $0.path } == ["tips[0].goal.event"])
    #expect(undeclared.first?.message.contains("did you mean \"a.used\"") == true)
    #expect(typo.of(.unusedEvent).map { $0.path } == ["events[1].id"])
  }
}

@Suite struct BeyondTipKitLint {
  @Test func aTipRuleNamingAnUnknownTipIsReportedUnlessATemplateCouldMakeIt() throws {
    let report = try lint(
      """
      {\(declaredEvents),
       "tips": [\(cleanTip("a.tip")), \(cleanTip("b.tip", #""rules": [{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}, {"tip": "a.tipp", "status": "invalidated"}, {"tip": "trail.new.north", "displayed": {"eq": 0}}]"#))],
       "templates": [{"id": "trail.new.{trail}", "title": "New: {trail}", "removal": "r", "sync": "local",
                      "rules": [{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}]}]}
      """)
    let unknown = report.of(.unknownTip)
    #expect(unknown.map(\.path) == ["tips[1].rules[1].tip"], "\(report.diagnostics)")
    #expect(unknown.first?.message.contains("did you mean \"a.tip\"?") == true)
  }

  @Test func aSelfFollowingTipAndALongerCycleAreEachReportedOnce() throws {
    func follows(_ target: String) -> String {
      #""rules": [{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}, {"tip": "\#(target)", "status": "invalidated"}]"#
    }
    let report = try lint(
      """
      {\(declaredEvents), "tips": [\(cleanTip("a.tip", follows("a.tip"))), \(cleanTip("b.tip", follows("c.tip"))),
        \(cleanTip("c.tip", follows("d.tip"))), \(cleanTip("d.tip", follows("b.tip")))]}
      """)
    let cycles = report.of(.followCycle)
    #expect(cycles.map(\.path) == ["tips[0].rules[1].tip", "tips[1].rules[1].tip"], "\(report.diagnostics)")
    #expect(cycles.last?.message.contains("(b.tip → c.tip → d.tip → b.tip)") == true)
    #expect(report.catalog == nil)
  }

  @Test func aTipAndItsGroupWhoseSchedulesShareNoInstant() throws {
    let report = try lint(
      """
      {\(declaredEvents), "tips": [\(cleanTip("a.tip", #""schedule": {"until": "2027-01-01T00:00:00Z"}"#))],
       "groups": [{"id": "g", "priority": "ordered", "tips": ["a.tip"], "schedule": {"from": "2027-01-01T00:00:00Z"}}]}
      """)
    #expect(report.of(.schedule).map(\.path) == ["groups[0].tips[0]"])
  }

  @Test func aHoldoutIsNotCopyForTranslators() throws {
    let catalog = """
      {\(declaredEvents), "locales": ["en", "ja"],
       "tips": [\(cleanTip("a.tip", #""localizations": {"ja": {"title": "エー"}}, "variants": {"b": {"title": "B", "localizations": {"ja": {"title": "ビー"}}}, "c": {"holdout": true}}"#))]}
      """
    let report = try lint(catalog, messages: ["ja": #"{"tipkit": {"a.tip.variants.c.title": "x"}}"#])
    #expect(report.of(.missingCopy).isEmpty, "\(report.diagnostics)")
    let extra = try #require(report.of(.extraMessageKey).first)
    #expect(extra.message.contains("a holdout, which has no copy"))
  }
}
