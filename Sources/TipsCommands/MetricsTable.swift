import TipsMetrics

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One row of the metrics: a tip over all its impressions (variant `all`), or one of its variants.
struct MetricsRow {
  var tip: String
  var variant: String
  var metrics: MetricSet

  /// A row per tip, then one per variant of it.
  static func rows(_ report: MetricsReport) -> [MetricsRow] {
    report.tips.flatMap { tip in
      [MetricsRow(tip: tip.tipID, variant: "all", metrics: tip.overall)]
        + tip.variants.map { MetricsRow(tip: tip.tipID, variant: $0.name, metrics: $0.metrics) }
    }
  }

  // The cells people read (`tipsd metrics`, `tipsd report`).

  /// `50% (1/2)`; with enough accounts its fixed-horizon interval and sample, `42% (50/120) [35%–49%, 104
  /// accounts]`; `— (n=0)` while nothing is decided; `—` for a tip without a goal.
  var goal: String {
    guard let goal = metrics.goal else { return "—" }
    guard let rate = goal.rate else { return "— (n=0)" }
    return "\(Format.percent(rate)) (\(goal.converted)/\(goal.decided))"
      + MetricsRow.interval(goal.interval, accounts: goal.accounts)
  }

  /// ` [35%–49%, 104 accounts]`, nothing without an interval.
  static func interval(_ interval: Interval?, accounts: Int) -> String {
    guard let interval else { return "" }
    return " [\(Format.percent(interval.low))–\(Format.percent(interval.high)), \(accounts) accounts]"
  }

  /// `90 min (n=3)`; `— (n=0)` before any exposure reached the goal; `—` for a tip without a goal.
  var timeToGoal: String {
    guard let time = metrics.timeToGoal else { return "—" }
    guard let median = time.median else { return "— (n=0)" }
    return "\(Format.duration(median)) (n=\(time.samples))"
  }

  /// `12% (3/25) ALERT`; `n/a` without an app-closed event.
  var close: String {
    guard let close = metrics.close else { return "n/a" }
    let rate = close.rate.map(Format.percent) ?? "—"
    return "\(rate) (\(close.closes)/\(close.decided))\(MetricsRow.interval(close.interval, accounts: close.accounts))"
      + (close.alert ? " ALERT" : "")
  }

  /// `1.20 → 2.40` goal donations per day before and after the first impression.
  var goalPerDay: String {
    let before = metrics.goalRate?.before?.perDay
    let after = metrics.goalRate?.after?.perDay
    guard before != nil || after != nil else { return "—" }
    return "\(Format.perDay(before)) → \(Format.perDay(after))"
  }
}

/// `tipsd metrics`' output: a table for people, or CSV with a column per number.
enum MetricsTable {
  /// The CSV columns, each named, with its raw value (empty: not applicable).
  static let columns: [(name: String, value: @Sendable (MetricsRow) -> String)] = [
    ("tip", { $0.tip }),
    ("variant", { $0.variant }),
    ("impressions", { String($0.metrics.impressions) }),
    ("goal_rate", { Format.raw($0.metrics.goal?.rate) }),
    ("goal_converted", { count($0.metrics.goal?.converted) }),
    ("goal_decided", { count($0.metrics.goal?.decided) }),
    ("goal_pending", { count($0.metrics.goal?.pending) }),
    ("median_time_to_goal_s", { Format.raw($0.metrics.timeToGoal?.median) }),
    ("time_to_goal_samples", { count($0.metrics.timeToGoal?.samples) }),
    ("close_rate", { Format.raw($0.metrics.close?.rate) }),
    ("closes", { count($0.metrics.close?.closes) }),
    ("close_decided", { count($0.metrics.close?.decided) }),
    ("close_alert", { $0.metrics.close.map { $0.alert ? "true" : "false" } ?? "" }),
    ("goal_per_day_before", { Format.raw($0.metrics.goalRate?.before?.perDay) }),
    ("goal_per_day_after", { Format.raw($0.metrics.goalRate?.after?.perDay) }),
    ("goal_rate_change", { Format.raw($0.metrics.goalRate?.change) }),
    ("goal_rate_low", { Format.raw($0.metrics.goal?.interval?.low) }),
    ("goal_rate_high", { Format.raw($0.metrics.goal?.interval?.high) }),
    ("goal_accounts", { count($0.metrics.goal?.accounts) }),
    ("close_rate_low", { Format.raw($0.metrics.close?.interval?.low) }),
    ("close_rate_high", { Format.raw($0.metrics.close?.interval?.high) }),
  ]

  private static func count(_ value: Int?) -> String { value.map(String.init) ?? "" }

  static func csv(_ report: MetricsReport) -> String {
    func field(_ text: String) -> String {
      text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" })
        ? "\"" + text.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\"" : text
    }
    let lines = [columns.map(\.name)] + MetricsRow.rows(report).map { row in columns.map { $0.value(row) } }
    return lines.map { $0.map(field).joined(separator: ",") }.joined(separator: "\n") + "\n"
  }

  /// The header and the cells people read, per row (shared with `tipsd report`).
  static let header = ["TIP", "VARIANT", "IMPR", "GOAL", "TIME TO GOAL", "CLOSE", "GOAL/DAY BEFORE→AFTER"]

  static func cells(_ row: MetricsRow) -> [String] {
    [row.tip, row.variant, String(row.metrics.impressions), row.goal, row.timeToGoal, row.close, row.goalPerDay]
  }

  /// An aligned table for people: rates as percentages with their sample sizes.
  static func text(_ report: MetricsReport) -> String {
    var out = ""
    if let accounts = report.accounts {
      out += "across \(accounts) accounts (time to goal: the median of the accounts' first use)\n"
    }
    out += TextTable.render([header] + MetricsRow.rows(report).map(cells))
    var compared = false
    for tip in report.tips {
      for comparison in tip.comparisons {
        compared = true
        out += "\(tip.tipID): \(comparison.variant) vs \(comparison.against): "
        out += verdict(comparison.estimate, srm: comparison.srm) + "\n"
      }
      if let lift = tip.lift {
        compared = true
        out += "\(tip.tipID): lift against the holdout: "
        out += verdict(lift.estimate, srm: lift.srm) + "\n"
      }
    }
    if compared || report.tips.contains(where: { $0.overall.goal?.interval != nil }) {
      let minimum = report.configuration.statistics.minimumAccounts
      out += "statistics: the account is the unit (rates: fixed-horizon 95% intervals, delta method); differences: "
      out += "accounts that did the goal within its window after the tip first became displayable for them, "
      out += "always-valid 95% (a confidence sequence: safe to look at daily), the fixed-horizon interval after it, "
      out += "both Bonferroni-corrected over the tip's comparisons; no interval under \(minimum) accounts a side "
      out += "(docs/measuring.md)\n"
    }
    if report.configuration.appClosedEvent == nil {
      out += "close rate: n/a (start the daemon with --app-closed-event NAME)\n"
    }
    return out
  }

  /// The difference (``difference(_:)``), or, when the sample-ratio check failed, a warning in its place: the arms'
  /// sizes say the assignment or the trigger is broken, so no difference between them means anything.
  static func verdict(_ found: Difference, srm: SampleRatio?) -> String {
    guard let srm, srm.flagged else { return difference(found) }
    let counts = srm.names.map { "\($0) \(srm.observed[$0] ?? 0)" }.joined(separator: ", ")
    let expected = srm.names.map { "\($0) \(Format.fixed(srm.expected[$0] ?? 0, 0))" }.joined(separator: ", ")
    return "sample ratio mismatch — triggered accounts \(counts) against \(expected) expected from the weights "
      + "(χ² p = \(pValue(srm.pValue))): the assignment or the trigger is broken, no verdict"
  }

  static func pValue(_ p: Double) -> String {
    if p >= 0.001 { return Format.fixed(p, 3) }
    if p <= 0 { return "0" }
    let exponent = Int(log10(p).rounded(.down))
    return Format.fixed(p / pow(10, Double(exponent)), 1) + "e\(exponent)"
  }

  /// `+1.0 point`-style: signed, one decimal.
  static func points(_ value: Double) -> String {
    let text = Format.fixed(abs(value) * 100, 1)
    return (text == "0.0" ? "" : value > 0 ? "+" : "−") + text
  }

  /// `+12.0 points (always valid 95%: −3.1 to +27.0; fixed horizon: +1.2 to +22.8; 412 vs 398 accounts)`, a CUPED
  /// line when computed; `+12.0 points — not enough data yet (12 vs 9 accounts, 100 a side needed)`;
  /// `— (no decided impressions on one side)`.
  static func difference(_ found: Difference) -> String {
    guard let d = found.difference else { return "— (no decided impressions on one side)" }
    let sample = "\(found.accounts) vs \(found.againstAccounts) accounts"
    guard let always = found.alwaysValid else {
      let needed = found.minimumAccounts > 0 ? ", \(found.minimumAccounts) a side needed" : ""
      return "\(points(d)) points — not enough data yet (\(sample)\(needed))"
    }
    var text = "\(points(d)) points (always valid 95%: \(points(always.low)) to \(points(always.high))"
    if let fixed = found.fixedHorizon { text += "; fixed horizon: \(points(fixed.low)) to \(points(fixed.high))" }
    text += "; \(sample))"
    if let relative = found.relative {
      text += "\n  relative: \(points(relative.estimate))% (always valid 95%: \(points(relative.alwaysValid.low))% to "
      text += "\(points(relative.alwaysValid.high))%)"
    }
    if let cuped = found.cuped {
      text += "\n  CUPED (goal donations before the trigger): \(points(cuped.difference)) points (always valid 95%: "
      text += "\(points(cuped.alwaysValid.low)) to \(points(cuped.alwaysValid.high)); fixed horizon: "
      text += "\(points(cuped.fixedHorizon.low)) to \(points(cuped.fixedHorizon.high)); variance "
      text += "−\(Format.percent(max(0, cuped.varianceReduction))))"
    }
    return text
  }
}
