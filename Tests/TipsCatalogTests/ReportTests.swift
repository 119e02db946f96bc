import Foundation
import Testing
import TipsJSON
import TipsServer

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

/// `tipsd lint` through the real command entry point: exit 1 on errors, 0 with warnings only or none, 2 on usage.
@Suite struct LintCommandExitCodes {
  func run(_ arguments: [String]) -> Int32 {
    TipsdCommand.main(["tipsd"] + arguments, environment: [:])
  }

  @Test func errorsOnly() {
    let path = Paths.fixture("duplicate-id-fail.json")
    let report = CatalogLoader.load(path: path)
    #expect(!report.errors.isEmpty && report.warnings.isEmpty)
    #expect(run(["lint", path]) == 1)
    #expect(run(["lint", path, "--format", "github"]) == 1)
  }

  @Test func warningsOnly() {
    let path = Paths.fixture("no-sync-fail.json")
    let report = CatalogLoader.load(path: path)
    #expect(report.errors.isEmpty && !report.warnings.isEmpty)
    #expect(run(["lint", path]) == 0)
    #expect(run(["lint", "--format", "json", path]) == 0)
  }

  @Test func clean() {
    #expect(run(["lint", Paths.demo, "--messages", Paths.demoMessages, "--simulate"]) == 0)
    #expect(run(["lint", Paths.fixture("id-pattern-fail.json"), "--id-pattern", "[A-Za-z]+-[0-9]+"]) == 0)
    #expect(run(["lint", Paths.fixture("id-pattern-fail.json"), "--id-pattern", "any"]) == 0)
  }

  @Test func usageErrors() {
    #expect(run(["lint"]) == 2)
    #expect(run(["lint", Paths.demo, "--format", "xml"]) == 2)
    #expect(run(["lint", Paths.demo, "--id-pattern", "(unclosed"]) == 2)
    #expect(run(["lint", Paths.demo, Paths.demo]) == 2)
    #expect(run(["strings"]) == 2)
    #expect(run(["strings", "export", Paths.demo, "--format", "po", "--out", "/tmp/x"]) == 2)
    #expect(run(["strings", "import", Paths.demo, "--format", "json", "--from", "/tmp/x"]) == 2)
  }

  @Test func serveAcceptsMessages() throws {
    let configuration = try TipsdCommand.parseServe(["--messages", "catalog/messages"], environment: [:])
    #expect(configuration.messagesDirectory == "catalog/messages")
  }
}
