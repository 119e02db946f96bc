import Foundation
import Testing
import TipsJSON

@testable import TipsCatalog

@Suite struct ReportFormats {
  static let report = CatalogReport(
    catalog: nil,
    diagnostics: [
      Diagnostic(
        severity: .error, check: "id-pattern", file: "catalog/app,v2:new.json", path: "tips[0].id", line: 12, column: 7,
        message: "tip id \"A\" is 100% wrong\nreally"),
      Diagnostic(severity: .warning, check: "no-sync", file: "catalog/app.json", path: "tips[1]", message: "no sync"),
    ],
    simulation: Simulation(
      tipCount: 3, freshInstall: ["a.tip"], alreadyQualified: ["a.tip", "b.tip"], neverShows: ["c.tip"]),
    files: ["catalog/app.json"])

  @Test func text() {
    #expect(
      Self.report.rendered(.text) == """
        catalog/app,v2:new.json:12:7: error: tips[0].id: tip id "A" is 100% wrong
        really [id-pattern]
        catalog/app.json: warning: tips[1]: no sync [no-sync]
        catalog/app.json: 1 error, 1 warning
        fresh install: 1 of 3 show: a.tip
        already qualified: 2 of 3 show: a.tip, b.tip
        never shows: c.tip

        """)
  }

  @Test func json() throws {
    let parsed = try JSONParser.parse(Self.report.rendered(.json))
    let first = try #require(parsed["diagnostics"]?[0])
    #expect(first["severity"] == "error")
    #expect(first["check"] == "id-pattern")
    #expect(first["file"] == "catalog/app,v2:new.json")
    #expect(first["path"] == "tips[0].id")
    #expect(first["line"] == 12)
    #expect(first["column"] == 7)
    #expect(first["message"] == "tip id \"A\" is 100% wrong\nreally")
    #expect(parsed["diagnostics"]?[1]?["line"] == .null)
    #expect(parsed["summary"]?["errors"] == 1)
    #expect(parsed["summary"]?["warnings"] == 1)
    #expect(parsed["summary"]?["files"] == ["catalog/app.json"])
    #expect(parsed["simulation"]?["freshInstall"] == ["a.tip"])
    #expect(parsed["simulation"]?["neverShows"] == ["c.tip"])
    #expect(parsed["simulation"]?["tips"] == 3)
  }

  /// Workflow commands: data escapes `%`, CR and LF; properties also `:` and `,`.
  @Test func github() {
    let lines = Self.report.rendered(.github).split(separator: "\n", omittingEmptySubsequences: false)
    #expect(
      lines[0]
        == "::error file=catalog/app%2Cv2%3Anew.json,line=12,col=7,title=tipsd lint (id-pattern)::tips[0].id: tip id \"A\" is 100%25 wrong%0Areally"
    )
    #expect(lines[1] == "::warning file=catalog/app.json,title=tipsd lint (no-sync)::tips[1]: no sync")
    #expect(lines[2] == "catalog/app.json: 1 error, 1 warning")
    #expect(CatalogReport.githubProperty("a:b,c%d\re") == "a%3Ab%2Cc%25d%0De")
  }

  @Test func aRealFixtureInEveryFormat() throws {
    let path = Paths.fixture("id-pattern-fail.json")
    let report = CatalogLoader.load(path: path)
    #expect(report.rendered(.text).contains("\(path):4:12: error: tips[0].id: tip id \"NewTrailTip-1\""))
    #expect(
      report.rendered(.github).contains(
        "::error file=\(path),line=4,col=12,title=tipsd lint (id-pattern)::tips[0].id: "))
    let json = try JSONParser.parse(report.rendered(.json))
    #expect(json["diagnostics"]?[0]?["line"] == 4)
  }
}

/// `tipsd lint`'s exit status is the report's: 1 on errors, 0 with warnings only or none (the command's usage
/// errors, status 2, are tested in TipsCommandsTests).
@Suite struct LintExitStatus {
  func status(_ path: String, messages: String? = nil, options: LintOptions = LintOptions()) -> Int32 {
    CatalogLoader.load(path: path, messagesDirectory: messages, options: options).exitStatus
  }

  @Test func errorsOnly() {
    let path = Paths.fixture("duplicate-id-fail.json")
    let report = CatalogLoader.load(path: path)
    #expect(!report.errors.isEmpty && report.warnings.isEmpty)
    #expect(report.exitStatus == 1)
  }

  @Test func warningsOnly() {
    let path = Paths.fixture("no-sync-fail.json")
    let report = CatalogLoader.load(path: path)
    #expect(report.errors.isEmpty && !report.warnings.isEmpty)
    #expect(report.exitStatus == 0)
  }

  @Test func clean() throws {
    var simulate = LintOptions()
    simulate.simulate = true
    #expect(status(Paths.demo, messages: Paths.demoMessages, options: simulate) == 0)
    var pattern = LintOptions()
    pattern.idPattern = try IDPattern(parsing: "[A-Za-z]+-[0-9]+")
    #expect(status(Paths.fixture("id-pattern-fail.json"), options: pattern) == 0)
    pattern.idPattern = try IDPattern(parsing: "any")
    #expect(status(Paths.fixture("id-pattern-fail.json"), options: pattern) == 0)
    #expect(status(Paths.fixture("id-pattern-fail.json")) == 1)
  }
}
