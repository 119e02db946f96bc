import Testing
import TipsEngine
import TipsJSON
import TipsMetrics
import TipsProtocol

@testable import TipsCommands

/// The measuring flags of `tipsd serve`, and the pure parts of `tipsd metrics`, `inspect` and `report`.
@Suite struct MeasureCommandTests {
  func serve(_ arguments: [String]) throws(UsageError) -> ServeCommand {
    try ServeCommand(parsing: arguments, environment: [:])
  }

  @Test func historyAndMetricsFlagsParse() throws {
    let defaults = try serve([]).configuration
    #expect(defaults.historyDays == 90 && defaults.appClosedEvent == nil && defaults.closeWindow == 10)
    #expect(defaults.closeRateAlert == nil && defaults.baselineDays == 7 && defaults.recordsHistory)
    let parsed = try serve([
      "--history-days", "30", "--app-closed-event", "app.backgrounded", "--close-window", "5", "--close-rate-alert",
      "0.2", "--baseline-days", "14",
    ]).configuration
    #expect(parsed.historyDays == 30 && parsed.appClosedEvent == "app.backgrounded" && parsed.closeWindow == 5)
    #expect(parsed.closeRateAlert == 0.2 && parsed.baselineDays == 14)
    #expect(try !serve(["--history-days", "0"]).configuration.recordsHistory)
    #expect(try MetricsCommand(parsing: ["--cuped", "--json"], environment: [:]).cuped)
    #expect(try !MetricsCommand(parsing: [], environment: [:]).cuped)
    let refusals: [([String], String)] = [
      (["--history-days", "-1"], "--history-days: must be 0 or a positive number of days"),
      (["--close-window", "0"], "--close-window: must be a positive number of seconds"),
      (["--close-rate-alert", "1.5"], "--close-rate-alert: must be a ratio from 0 to 1"),
      (["--baseline-days", "0"], "--baseline-days: must be a positive number of days"),
      (["--app-closed-event", ""], "--app-closed-event: must not be empty"),
      (["--history-days"], "--history-days needs a value"),
    ]
    for (arguments, message) in refusals {
      #expect(throws: UsageError.invalid(message), "\(arguments)") { try serve(arguments) }
    }
  }

  @Test func sinceAcceptsEpochSecondsAndSpansBackFromNow() {
    #expect(Since("1700000000")?.instant(now: 5) == 1_700_000_000)
    #expect(Since("90s")?.instant(now: 1_000) == 910)
    #expect(Since("30m")?.instant(now: 10_000) == 8_200)
    #expect(Since("24h")?.instant(now: 100_000) == 13_600)
    #expect(Since("7d")?.instant(now: 1_000_000) == 395_200)
    #expect(Since("1w")?.instant(now: 1_000_000) == 395_200)
    #expect(Since("7x") == nil && Since("d") == nil && Since("-1d") == nil)
  }

  @Test func numbersAndTimesFormatInOnePlace() {
    #expect(Format.fixed(0.5, 0) == "1")
    #expect(Format.fixed(12.345, 2) == "12.35" && Format.fixed(3, 1) == "3.0" && Format.fixed(0.05, 2) == "0.05")
    #expect(Format.fixed(-1.25, 1) == "-1.3" && Format.fixed(.infinity, 1) == "—")
    #expect(Format.instant(1_767_225_600) == "2026-01-01T00:00:00Z")
    #expect(Format.instant(1_767_225_600.9) == "2026-01-01T00:00:00Z")
    #expect(Format.percent(0.5) == "50%" && Format.percent(0.053) == "5.3%" && Format.percent(0) == "0%")
    #expect(Format.duration(5407) == "90 min" && Format.duration(30) == "30 s" && Format.duration(90_000) == "25.0 h")
    #expect(Format.raw(2) == "2" && Format.raw(0.25) == "0.25" && Format.raw(nil) == "")
    #expect(TextTable.render([["A", "BB"], ["CCC", "D"]]) == "A    BB\nCCC  D\n")
    #expect(ReportHTML.escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;")
  }

  static let report = """
    {"now": 100, "since": null, "until": null, "appClosedEvent": null, "closeWindow": 10, "closeRateAlert": null,
     "baselineDays": 7, "historyStart": null,
     "tips": [{"tipId": "a,b", "goal": {"event": "g", "within": {"hours": 24}}, "overall": {"impressions": 2,
       "goal": null, "timeToGoal": null, "close": {"available": false}, "goalRate": null},
      "variants": [{"variant": "x", "impressions": 1, "goal": {"converted": 1, "decided": 1, "pending": 0, "rate": 1,
       "low": 0.2, "high": 0.9, "accounts": 120},
       "timeToGoal": {"samples": 1, "median": 60, "open": 0}, "close": {"available": false}, "goalRate": null}]}]}
    """

  @Test func theMetricsTableHasANamedRowPerTipAndVariantAndCSVQuotes() throws {
    let report = try MetricsGetRequest.Response(json: try JSONParser.parse(Self.report)).report
    let rows = MetricsRow.rows(report)
    #expect(rows.map(\.tip) == ["a,b", "a,b"] && rows.map(\.variant) == ["all", "x"])
    #expect(rows.map(\.metrics.impressions) == [2, 1])
    #expect(rows[0].goal == "—" && rows[1].goal == "100% (1/1) [20%–90%, 120 accounts]")
    #expect(rows[1].timeToGoal == "60 s (n=1)" && rows[1].close == "n/a" && rows[1].goalPerDay == "—")
    let csv = MetricsTable.csv(report).split(separator: "\n")
    #expect(csv[0].hasPrefix("tip,variant,impressions,goal_rate,goal_converted"))
    #expect(csv[1] == "\"a,b\",all,2,,,,,,,,,,,,,,,,,,")
    // The interval as the daemon wrote it (across accounts), with its sample.
    #expect(csv[2] == "\"a,b\",x,1,1,1,1,0,60,1,,,,,,,,0.2,0.9,120,,", "\(csv[2])")
    let text = MetricsTable.text(report)
    #expect(text.contains("100% (1/1)") && text.contains("60 s (n=1)") && text.contains("close rate: n/a"))
  }

  @Test func aPooledReportSaysHowManyAccountsAndComparesVariantsWithTheirIntervals() {
    func set(_ converted: Int, _ decided: Int) -> MetricSet {
      MetricSet(
        impressions: decided,
        goal: GoalConversion(
          converted: converted, decided: decided, pending: 0, rate: Double(converted) / Double(decided)))
    }
    let goal = TipGoal(eventID: "search.used", within: 86_400)
    var report = MetricsReport(
      now: 0, since: nil, until: nil, configuration: MetricsConfiguration(), historyStart: nil,
      tips: [
        TipMetrics(tipID: "search.tip", goal: goal, overall: set(4, 8), variants: [("a", set(1, 4)), ("b", set(3, 4))])
      ])
    report.accounts = 3
    // The intervals as a pool computed them (AccountStatisticsTests works such figures out by hand).
    report.tips[0].comparisons = [
      VariantComparison(
        variant: "b", against: "a", variantRate: Proportion(converted: 3, decided: 4),
        againstRate: Proportion(converted: 1, decided: 4),
        estimate: Difference(
          difference: 0.5, accounts: 412, againstAccounts: 398, minimumAccounts: 100, standardError: 0.05,
          fixedHorizon: Interval(low: 0.402, high: 0.598), alwaysValid: Interval(low: 0.348, high: 0.652),
          cuped: CupedEstimate(
            difference: 0.49, standardError: 0.04, theta: 0.1, varianceReduction: 0.36,
            fixedHorizon: Interval(low: 0.412, high: 0.568), alwaysValid: Interval(low: 0.369, high: 0.611))))
    ]
    report.tips[0].lift = Lift(
      exposed: AccountConversion(triggered: 12, converted: 9, decided: 12, pending: 0),
      holdout: AccountConversion(triggered: 9, converted: 2, decided: 9, pending: 0),
      estimate: Difference(difference: 0.55, accounts: 12, againstAccounts: 9, minimumAccounts: 100))
    let text = MetricsTable.text(report)
    #expect(text.hasPrefix("across 3 accounts"))
    #expect(
      text.contains(
        "search.tip: b vs a: +50.0 points (always valid 95%: +34.8 to +65.2; fixed horizon: +40.2 to +59.8; "
          + "412 vs 398 accounts)\n  CUPED (goal donations before the trigger): +49.0 points (always valid 95%: +36.9 to "
          + "+61.1; fixed horizon: +41.2 to +56.8; variance −36%)"), "\(text)")
    // A failed sample-ratio check replaces the verdict with a warning.
    report.tips[0].comparisons[0].srm = SampleRatio(
      observed: [("b", 2_000), ("a", 1_600)], weights: ["a": 1, "b": 1])
    #expect(report.tips[0].comparisons[0].srm?.flagged == true)
    #expect(
      MetricsTable.text(report).contains(
        "search.tip: b vs a: sample ratio mismatch — triggered accounts b 2000, a 1600 against b 1800, a 1800 "
          + "expected from the weights (χ² p = 2.6e-11): the assignment or the trigger is broken, no verdict"),
      "\(MetricsTable.text(report))")
    report.tips[0].comparisons[0].srm = nil
    #expect(
      text.contains(
        "search.tip: lift against the holdout: +55.0 points — not enough data yet (12 vs 9 accounts, 100 a side "
          + "needed)"), "\(text)")
    report.tips[0].lift = Lift(
      exposed: AccountConversion(triggered: 3, converted: 3, decided: 4, pending: 0), holdout: .none,
      estimate: Difference(difference: nil, accounts: 3, againstAccounts: 0, minimumAccounts: 100))
    #expect(
      MetricsTable.text(report).contains(
        "search.tip: lift against the holdout: — (no decided impressions on one side)"))
    #expect(
      !MetricsTable.text(
        MetricsReport(
          now: 0, since: nil, until: nil, configuration: MetricsConfiguration(), historyStart: nil, tips: [])
      ).contains("across"))
  }

  @Test func aCloseRateAboveTheAlertIsMarked() {
    let close = CloseRate(closes: 3, decided: 10, pending: 1, rate: 0.3, alert: true)
    let row = MetricsRow(tip: "t", variant: "all", metrics: MetricSet(impressions: 11, close: close))
    #expect(row.close == "30% (3/10) ALERT")
    #expect(MetricsTable.columns.first { $0.name == "close_alert" }?.value(row) == "true")
  }
}
