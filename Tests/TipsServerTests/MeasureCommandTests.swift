import Testing
import TipsJSON
@testable import TipsServer

/// The measuring flags of `tipsd serve`, and the pure parts of `tipsd metrics`, `inspect` and `report`.
@Suite struct MeasureCommandTests {
  @Test func historyAndMetricsFlagsParse() throws {
    let defaults = try TipsdCommand.parseServe([], environment: [:])
    #expect(defaults.historyDays == 90 && defaults.appClosedEvent == nil && defaults.closeWindow == 10)
    #expect(defaults.closeRateAlert == nil && defaults.baselineDays == 7 && defaults.recordsHistory)
    let parsed = try TipsdCommand.parseServe(
      [
        "--history-days", "30", "--app-closed-event", "app.backgrounded", "--close-window", "5", "--close-rate-alert",
        "0.2", "--baseline-days", "14",
      ], environment: [:])
    #expect(parsed.historyDays == 30 && parsed.appClosedEvent == "app.backgrounded" && parsed.closeWindow == 5)
    #expect(parsed.closeRateAlert == 0.2 && parsed.baselineDays == 14)
    #expect(try !TipsdCommand.parseServe(["--history-days", "0"], environment: [:]).recordsHistory)
    for bad in [
      ["--history-days", "-1"], ["--close-window", "0"], ["--close-rate-alert", "1.5"], ["--baseline-days", "0"],
      ["--app-closed-event", ""], ["--history-days"],
    ] {
      #expect(throws: ServerError.self, "\(bad)") { try TipsdCommand.parseServe(bad, environment: [:]) }
    }
  }

  @Test func sinceAcceptsEpochSecondsAndSpansBackFromNow() {
    #expect(SinceParser.instant("1700000000", now: 5) == 1_700_000_000)
    #expect(SinceParser.instant("90s", now: 1_000) == 910)
    #expect(SinceParser.instant("30m", now: 10_000) == 8_200)
    #expect(SinceParser.instant("24h", now: 100_000) == 13_600)
    #expect(SinceParser.instant("7d", now: 1_000_000) == 395_200)
    #expect(SinceParser.instant("1w", now: 1_000_000) == 395_200)
    #expect(SinceParser.instant("7x", now: 1) == nil && SinceParser.instant("d", now: 1) == nil)
  }

  @Test func numbersAndTimesFormatWithoutFoundation() {
    #expect(Format.fixed(0.5, 0) == "1")
    #expect(Format.fixed(12.345, 2) == "12.35" && Format.fixed(3, 1) == "3.0" && Format.fixed(0.05, 2) == "0.05")
    #expect(Format.fixed(-1.25, 1) == "-1.3" && Format.fixed(.infinity, 1) == "—")
    #expect(Timestamps.iso(1_767_225_600) == "2026-01-01T00:00:00Z")
    #expect(MetricsTable.percent("0.5") == "50%" && MetricsTable.percent("0.053") == "5.3%")
    #expect(MetricsTable.duration("5407") == "90 min" && MetricsTable.duration("30") == "30 s")
    #expect(Aligned.table([["A", "BB"], ["CCC", "D"]]) == "A    BB\nCCC  D\n")
    #expect(ReportHTML.escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;")
  }

  @Test func theMetricsTableHasARowPerTipAndVariantAndCSVQuotes() throws {
    let report = try JSONParser.parse(
      #"""
      {"appClosedEvent": null, "tips": [{"tipId": "a,b", "goal": null, "overall": {"impressions": 2, "goal": null,
       "timeToGoal": null, "close": {"available": false}, "goalRate": null},
       "variants": [{"variant": "x", "impressions": 1, "goal": {"converted": 1, "decided": 1, "pending": 0, "rate": 1},
       "timeToGoal": {"samples": 1, "median": 60, "open": 0}, "close": {"available": false}, "goalRate": null}]}]}
      """#)
    let rows = MetricsTable.rows(report)
    #expect(rows.map { Array($0.prefix(4)) } == [["a,b", "all", "2", ""], ["a,b", "x", "1", "1"]])
    #expect(MetricsTable.csv(report).split(separator: "\n")[1].hasPrefix("\"a,b\",all,2,"))
    let text = MetricsTable.text(report)
    #expect(text.contains("100% (1/1)") && text.contains("60 s (n=1)") && text.contains("close rate: n/a"))
  }
}
