import Testing
import TipsEngine
import TipsMetrics

/// A history written by hand, in order: each entry gets the next cursor. Times are seconds after `t0` (a virtual
/// clock's start), so each expected value below can be worked out from the lines above it.
private struct History {
  static let t0: Timestamp = 1_000_000
  var events: [HistoryEvent] = []

  mutating func add(_ event: HistoryEvent) {
    var event = event
    event.cursor = Int64(events.count + 1)
    events.append(event)
  }

  mutating func impression(_ tip: String = "filter.tip", at seconds: Double, variant: String? = nil) {
    add(.impression(tip: tip, variant: variant, at: Self.t0 + seconds, duration: 2))
  }

  mutating func donate(_ event: String, at seconds: Double) {
    add(.donation(event: event, at: Self.t0 + seconds))
  }

  /// The tip became displayable (`eligibility` with `shouldDisplay: true`): a variant's trigger.
  mutating func displayable(_ tip: String = "filter.tip", at seconds: Double, variant: String? = nil) {
    add(
      HistoryEvent(
        kind: .eligibility, at: Self.t0 + seconds, tipID: tip, variant: variant, status: "available",
        shouldDisplay: true))
  }

  mutating func action(_ tip: String = "filter.tip", at seconds: Double) {
    add(.action(tip: tip, variant: nil, at: Self.t0 + seconds, id: "learn-more", index: 0))
  }
}

private let hour = 3_600.0
private let day = 86_400.0
private let filterTip = MetricsTip(id: "filter.tip", goal: TipGoal(eventID: "filter.used", within: 24 * hour))
private let closing = MetricsConfiguration(appClosedEvent: "app.backgrounded", closeWindow: 10, closeRateAlert: 0.3)

private func compute(
  _ history: History, tips: [MetricsTip] = [filterTip], configuration: MetricsConfiguration = closing,
  now seconds: Double, since: Double? = nil, until: Double? = nil
) -> MetricsReport {
  Metrics.compute(
    history: history.events, tips: tips, configuration: configuration, since: since.map { History.t0 + $0 },
    until: until.map { History.t0 + $0 }, now: History.t0 + seconds, historyStart: history.events.first?.at)
}

@Suite("Seed 000's metrics over hand-worked histories")
struct MetricsTests {
  @Test("no impressions: zero samples, no rates, no first impression")
  func noImpressions() throws {
    var history = History()
    history.donate("filter.used", at: 0)
    history.donate("app.backgrounded", at: 5)
    let overall = try #require(compute(history, now: 10 * day).tip("filter.tip")).overall
    #expect(overall.impressions == 0)
    #expect(overall.goal == GoalConversion(converted: 0, decided: 0, pending: 0, rate: nil))
    #expect(overall.timeToGoal == TimeToGoal(samples: 0, median: nil, open: 0))
    #expect(overall.close == CloseRate(closes: 0, decided: 0, pending: 0, rate: nil, alert: false))
    #expect(overall.goalRate == GoalRateChange(firstImpressionAt: nil))
    #expect(overall.goalRate?.change == nil)
  }

  @Test("a goal event before the impression does not count")
  func goalBeforeImpression() throws {
    var history = History()
    history.donate("filter.used", at: 100)
    history.impression(at: 200)
    let overall = try #require(compute(history, now: 2 * day).tip("filter.tip")).overall
    // The window (24 h) closed at 200 s + 24 h < 2 days: decided, not converted.
    #expect(overall.goal == GoalConversion(converted: 0, decided: 1, pending: 0, rate: 0))
    #expect(overall.timeToGoal == TimeToGoal(samples: 0, median: nil, open: 1))
  }

  @Test("a goal in the same instant counts only when it was donated after the impression")
  func sameInstant() throws {
    var before = History()
    before.donate("filter.used", at: 50)
    before.impression(at: 50)
    #expect(compute(before, now: 2 * day).tip("filter.tip")?.overall.goal?.converted == 0)
    var after = History()
    after.impression(at: 50)
    after.donate("filter.used", at: 50)
    #expect(compute(after, now: 2 * day).tip("filter.tip")?.overall.goal?.converted == 1)
    #expect(compute(after, now: 2 * day).tip("filter.tip")?.overall.timeToGoal?.median == 0)
  }

  @Test("two impressions then one goal: the goal credits the latest impression only (1 of 2)")
  func twoImpressionsOneGoal() throws {
    var history = History()
    history.impression(at: 0)
    history.impression(at: 1 * hour)
    history.donate("filter.used", at: 3 * hour)
    let overall = try #require(compute(history, now: 5 * day).tip("filter.tip")).overall
    #expect(overall.impressions == 2)
    #expect(overall.goal == GoalConversion(converted: 1, decided: 2, pending: 0, rate: 0.5))
    // One exposure, from the first impression (0) to the first goal after it (3 h).
    #expect(overall.timeToGoal == TimeToGoal(samples: 1, median: 3 * hour, open: 0))
  }

  @Test("a goal later than the window does not convert; an open window is pending, not a failure")
  func windowAndPending() throws {
    var history = History()
    history.impression(at: 0)
    history.donate("filter.used", at: 25 * hour)  // 25 h > 24 h: not converted, but ends the exposure
    history.impression(at: 2 * day)  // no goal yet, 1 h ago
    let overall = try #require(compute(history, now: 2 * day + hour).tip("filter.tip")).overall
    #expect(overall.goal == GoalConversion(converted: 0, decided: 1, pending: 1, rate: 0))
    // One install: its first impression (0) to the first goal after it (25 h). Per exposure, the second is open.
    #expect(overall.timeToGoal == TimeToGoal(samples: 1, median: 25 * hour, open: 0))
    #expect(overall.timeToGoalPerExposure == TimeToGoal(samples: 1, median: 25 * hour, open: 1))
    // Exactly 24 h after counts (at most `within`).
    var edge = History()
    edge.impression(at: 0)
    edge.donate("filter.used", at: 24 * hour)
    #expect(compute(edge, now: 3 * day).tip("filter.tip")?.overall.goal?.converted == 1)
  }

  @Test("ties for the median: an even count takes the mean of the two middle samples, equal samples are kept")
  func medianTies() throws {
    // Four exposures, each ended by a goal: 60 s, 120 s, 120 s, 300 s → (120 + 120) / 2 = 120.
    var history = History()
    var t = 0.0
    for duration in [300.0, 120, 60, 120] {
      history.impression(at: t)
      history.donate("filter.used", at: t + duration)
      t += day
    }
    let overall = try #require(compute(history, now: 10 * day).tip("filter.tip")).overall
    #expect(overall.timeToGoalPerExposure == TimeToGoal(samples: 4, median: 120, open: 0))
    // Time to first use is the install's first impression to its first goal: one sample.
    #expect(overall.timeToGoal == TimeToGoal(samples: 1, median: 300, open: 0))
    #expect(overall.goal?.converted == 4 && overall.goal?.rate == 1)
    #expect(Metrics.median([100, 200]) == 150)
    #expect(Metrics.median([5, 5, 9]) == 5)
    #expect(Metrics.median([7]) == 7)
    #expect(Metrics.median([]) == nil)
  }

  @Test("an action between the impression and the app close means it was not a close")
  func actionBeforeClose() throws {
    var history = History()
    history.impression(at: 0)
    history.action(at: 2)
    history.donate("app.backgrounded", at: 5)  // within 10 s, but the user engaged first
    history.impression(at: day)
    history.donate("app.backgrounded", at: day + 4)  // a close
    history.impression(at: 2 * day)
    history.donate("app.backgrounded", at: 2 * day + 11)  // 11 s > 10 s: not a close
    history.impression(at: 3 * day)
    history.action("other.tip", at: 3 * day + 1)  // another tip's action does not count
    history.donate("app.backgrounded", at: 3 * day + 10)  // exactly 10 s: a close
    let overall = try #require(compute(history, now: 4 * day).tip("filter.tip")).overall
    #expect(overall.close == CloseRate(closes: 2, decided: 4, pending: 0, rate: 0.5, alert: true))
  }

  @Test(
    "the close rate: pending while the window is open, the latest impression takes the close, flagged above the alert")
  func closeRate() throws {
    var history = History()
    history.impression(at: 0)
    history.impression(at: 3)
    history.donate("app.backgrounded", at: 6)  // credits the impression at 3 s only
    history.impression(at: 100)  // 5 s old at `now`, nothing after it: pending
    let overall = try #require(compute(history, now: 105).tip("filter.tip")).overall
    #expect(overall.close == CloseRate(closes: 1, decided: 2, pending: 1, rate: 0.5, alert: true))
    let relaxed = MetricsConfiguration(appClosedEvent: "app.backgrounded", closeRateAlert: 0.5)
    #expect(compute(history, configuration: relaxed, now: 105).tip("filter.tip")?.overall.close?.alert == false)
    let unflagged = MetricsConfiguration(appClosedEvent: "app.backgrounded")
    #expect(compute(history, configuration: unflagged, now: 105).tip("filter.tip")?.overall.close?.alert == false)
  }

  @Test("without an app-closed event the close rate is unavailable; without a goal the goal metrics are")
  func unavailable() throws {
    var history = History()
    history.impression(at: 0)
    history.impression("plain.tip", at: 0)
    let report = compute(
      history, tips: [filterTip, MetricsTip(id: "plain.tip", goal: nil)], configuration: MetricsConfiguration(),
      now: day)
    #expect(report.tip("filter.tip")?.overall.close == nil)
    #expect(report.tip("filter.tip")?.overall.goal != nil)
    let plain = try #require(report.tip("plain.tip")).overall
    #expect(plain.impressions == 1 && plain.goal == nil && plain.timeToGoal == nil && plain.goalRate == nil)
    #expect(report.json["tips"]?[1]?["overall"]?["close"] == ["available": false])
    #expect(report.json["tips"]?[1]?["overall"]?["goal"] == .null)
  }

  @Test("per variant: impressions grouped by the variant shown; the next impression of any variant ends a window")
  func perVariant() throws {
    let tip = MetricsTip(id: "filter.tip", goal: filterTip.goal, variants: ["friendly", "terse"])
    var history = History()
    history.impression(at: 0, variant: "friendly")
    history.donate("filter.used", at: hour)  // friendly converts
    history.impression(at: day, variant: "terse")
    history.impression(at: day + hour, variant: "friendly")  // takes over from terse
    history.donate("filter.used", at: day + 2 * hour)  // friendly converts again
    history.impression(at: 3 * day, variant: "terse")  // no goal within 24 h
    let report = try #require(compute(history, tips: [tip], now: 5 * day).tip("filter.tip"))
    #expect(report.variants.map(\.name) == ["friendly", "terse"])
    #expect(report.variant("friendly")?.goal == GoalConversion(converted: 2, decided: 2, pending: 0, rate: 1))
    #expect(report.variant("terse")?.goal == GoalConversion(converted: 0, decided: 2, pending: 0, rate: 0))
    #expect(report.overall.goal == GoalConversion(converted: 2, decided: 4, pending: 0, rate: 0.5))
    // Exposures: friendly@0 → 1 h; terse@1 d → +2 h (the impression at 1 d + 1 h continues it); terse@3 d open.
    #expect(report.variant("friendly")?.timeToGoalPerExposure == TimeToGoal(samples: 1, median: hour, open: 0))
    #expect(report.variant("terse")?.timeToGoalPerExposure == TimeToGoal(samples: 1, median: 2 * hour, open: 1))
    // Time to first use per variant: from the variant's first impression.
    #expect(report.variant("friendly")?.timeToGoal == TimeToGoal(samples: 1, median: hour, open: 0))
    #expect(report.variant("terse")?.timeToGoal == TimeToGoal(samples: 1, median: 2 * hour, open: 0))
    #expect(report.json["variants"]?[1]?["variant"] == "terse")
  }

  @Test("the period selects impressions by their instant; outcomes after the period still count")
  func period() throws {
    var history = History()
    history.impression(at: 0)
    history.impression(at: 2 * day)
    history.donate("filter.used", at: 2 * day + hour)
    history.impression(at: 4 * day)
    let report = compute(history, now: 6 * day, since: day, until: 3 * day)
    let overall = try #require(report.tip("filter.tip")).overall
    #expect(overall.impressions == 1)
    #expect(overall.goal == GoalConversion(converted: 1, decided: 1, pending: 0, rate: 1))
    let open = compute(history, now: 6 * day, since: 2 * day + 2 * hour)
    #expect(open.tip("filter.tip")?.overall.goal == GoalConversion(converted: 0, decided: 1, pending: 0, rate: 0))
  }

  @Test("the goal's daily rate in the days before the first impression against the days after")
  func dailyRateBeforeAndAfter() throws {
    var history = History()
    history.donate("search.opened", at: 0)  // the history starts here
    for d in [1.0, 3, 5] { history.donate("filter.used", at: d * day) }  // 3 in the 7 days before
    history.impression(at: 7 * day)
    for d in 0..<14 { history.donate("filter.used", at: 7 * day + Double(d) * day / 2 + 60) }  // 14 in 7 days
    history.donate("filter.used", at: 15 * day)  // beyond the 7 days after
    let rate = try #require(compute(history, now: 20 * day).tip("filter.tip")?.overall.goalRate)
    #expect(rate.firstImpressionAt == History.t0 + 7 * day)
    #expect(rate.before == RateWindow(from: History.t0, to: History.t0 + 7 * day, count: 3))
    #expect(rate.before?.days == 7)
    #expect(rate.after == RateWindow(from: History.t0 + 7 * day, to: History.t0 + 14 * day, count: 14))
    #expect(rate.after?.perDay == 2)
    #expect(abs((rate.change ?? 0) - 2 / (3.0 / 7)) < 1e-9)
    // The history began 2 days before the first impression: "before" covers 2 days only. "After" stops at now.
    var short = History()
    short.donate("filter.used", at: 0)
    short.donate("filter.used", at: day)
    short.impression(at: 2 * day)
    short.donate("filter.used", at: 2 * day + 1)
    let cut = try #require(compute(short, now: 3 * day).tip("filter.tip")?.overall.goalRate)
    #expect(cut.before == RateWindow(from: History.t0, to: History.t0 + 2 * day, count: 2))
    #expect(cut.after == RateWindow(from: History.t0 + 2 * day, to: History.t0 + 3 * day, count: 1))
    #expect(cut.change == 1)
    // A donation at the very instant of `now` is in the span after (nothing can come after now).
    var atNow = History()
    atNow.impression(at: 0)
    atNow.donate("filter.used", at: day)
    #expect(compute(atNow, now: day).tip("filter.tip")?.overall.goalRate?.after?.count == 1)
    #expect(compute(atNow, now: 2 * day, until: day).tip("filter.tip")?.overall.goalRate?.after?.count == 0)
    // Less than a day of history before the first impression: no daily rate, so no ratio.
    var brief = History()
    brief.donate("filter.used", at: 0)
    brief.impression(at: 1_800)
    brief.donate("filter.used", at: 3_600)
    let partial = try #require(compute(brief, now: 3 * day).tip("filter.tip")?.overall.goalRate)
    #expect(partial.before?.count == 1 && partial.before?.perDay == nil && partial.change == nil)
    #expect(partial.after?.perDay != nil)
    // No goal donations before: no ratio.
    var fresh = History()
    fresh.impression(at: 0)
    fresh.donate("filter.used", at: 10)
    let none = try #require(compute(fresh, now: day).tip("filter.tip")?.overall.goalRate)
    #expect(none.before?.days == 0 && none.before?.perDay == nil && none.change == nil)
  }

  @Test("the JSON report names every member and its sample sizes")
  func json() throws {
    var history = History()
    history.impression(at: 0)
    history.donate("filter.used", at: 30)
    let json = compute(history, now: day).json
    #expect(json["appClosedEvent"] == "app.backgrounded")
    #expect(json["closeRateAlert"] == .double(0.3))
    let overall = try #require(json["tips"]?[0]?["overall"])
    #expect(overall["impressions"] == 1)
    // One install is one account: the rate's interval needs 100 accounts, so there is none (issue #38).
    #expect(
      overall["goal"] == [
        "converted": 1, "decided": 1, "pending": 0, "rate": 1, "low": .null, "high": .null,
        "interval": "fixedHorizon", "accounts": 1, "notEnoughData": true,
      ])
    #expect(overall["timeToGoal"] == ["samples": 1, "median": 30, "open": 0])
    #expect(overall["timeToGoalPerExposure"] == ["samples": 1, "median": 30, "open": 0])
    #expect(overall["holdout"] == false)
    #expect(json["tips"]?[0]?["lift"] == .null)
    #expect(overall["close"]?["available"] == true)
    #expect(overall["goalRate"]?["change"] == .null)
    #expect(json["tips"]?[0]?["goal"] == ["event": "filter.used", "within": ["days": 1]])
    #expect(json["method"]?["unit"] == "account" && json["method"]?["minimumAccounts"] == 100)
    #expect(json["method"]?["interval"] == "alwaysValid" && json["method"]?["cuped"] == .null)
  }

  @Test(
    "time to first use, as defined: four impressions a day apart, goals 1 h after the first and 2 h after the fourth")
  func timeToFirstUse() throws {
    var history = History()
    history.impression(at: 0)
    history.donate("filter.used", at: hour)
    history.impression(at: day)
    history.impression(at: 2 * day)
    history.impression(at: 3 * day)
    history.donate("filter.used", at: 3 * day + 2 * hour)
    let overall = try #require(compute(history, now: 10 * day).tip("filter.tip")).overall
    // One install, one sample: its first impression to the first goal after it.
    #expect(overall.timeToGoal == TimeToGoal(samples: 1, median: 3_600, open: 0))
    // Per exposure (the first impression since the last goal): 1 h and, from the second impression, 2 d + 2 h.
    #expect(overall.timeToGoalPerExposure == TimeToGoal(samples: 2, median: (hour + 2 * day + 2 * hour) / 2, open: 0))
    // A first impression outside the period is not this period's install; no goal yet leaves it open.
    #expect(
      compute(history, now: 10 * day, since: hour).tip("filter.tip")?.overall.timeToGoal
        == TimeToGoal(samples: 0, median: nil, open: 0))
    var waiting = History()
    waiting.impression(at: 0)
    #expect(
      compute(waiting, now: day).tip("filter.tip")?.overall.timeToGoal == TimeToGoal(samples: 0, median: nil, open: 1))
  }

  /// Adds a holdout's counterfactual impression (the history's `exposure` entry).
  private static func exposure(_ history: inout History, at seconds: Double) {
    history.add(.exposure(tip: "filter.tip", variant: "control", at: History.t0 + seconds))
  }

  @Test("lift against a holdout in one install: goal rates and their difference; one account a side is not enough")
  func holdoutLift() throws {
    let tip = MetricsTip(
      id: "filter.tip", goal: filterTip.goal, variants: ["friendly", "control"], holdouts: ["control"])
    var history = History()
    // Exposed (friendly): displayable at 0 (its trigger), then four impressions a day apart; the first three are
    // followed by a goal within 24 h.
    history.displayable(at: 0, variant: "friendly")
    for d in 0..<4 {
      history.impression(at: Double(d) * day, variant: "friendly")
      if d < 3 { history.donate("filter.used", at: Double(d) * day + hour) }
    }
    // Held out (after tips/setVariant; in a fleet, other installs): four counterfactual impressions, one goal.
    for d in 10..<14 {
      Self.exposure(&history, at: Double(d) * day)
      if d == 10 { history.donate("filter.used", at: Double(d) * day + 30 * 60) }
    }
    let report = try #require(compute(history, tips: [tip], now: 20 * day).tip("filter.tip"))
    // friendly: 3 of 4 converted (rate 0.75); control: 1 of 4 (rate 0.25); lift 0.5.
    #expect(report.variant("friendly")?.goal == GoalConversion(converted: 3, decided: 4, pending: 0, rate: 0.75))
    let control = try #require(report.variant("control"))
    #expect(control.holdout && control.impressions == 4)
    #expect(control.goal == GoalConversion(converted: 1, decided: 4, pending: 0, rate: 0.25))
    #expect(control.timeToGoal == TimeToGoal(samples: 1, median: 1_800, open: 0))
    #expect(control.close == nil && control.goalRate == nil)
    // The overall set is the exposed installs' alone.
    #expect(report.overall.impressions == 4 && report.overall.goal?.converted == 3)
    let lift = try #require(report.lift)
    // Primary: the account, triggered at its first displayability (exposed) or counterfactual exposure (held
    // out), converted when the goal followed within 24 h: both did (1 h, 30 min after): 1 − 1 = 0.
    #expect(lift.exposed == AccountConversion(triggered: 1, converted: 1, decided: 1, pending: 0))
    #expect(lift.holdout == AccountConversion(triggered: 1, converted: 1, decided: 1, pending: 0))
    #expect(lift.difference == 0)
    #expect(report.variant("friendly")?.triggered?.converted == 1 && control.triggered?.triggered == 1)
    // Secondary, per impression: 3 of 4 against 1 of 4.
    let perImpression = try #require(lift.perImpression)
    #expect(perImpression.rate == Proportion(converted: 3, decided: 4))
    #expect(perImpression.againstRate == Proportion(converted: 1, decided: 4))
    #expect(perImpression.estimate.difference == 0.5)
    // The account is the unit: this install is one account on each side, so no interval ("not enough data yet").
    #expect(lift.estimate.accounts == 1 && lift.estimate.againstAccounts == 1 && lift.estimate.notEnoughData)
    #expect(lift.interval == nil && lift.estimate.fixedHorizon == nil)
    let json = try #require(compute(history, tips: [tip], now: 20 * day).json["tips"]?[0]?["lift"])
    #expect(json["difference"] == 0 && json["confidence"] == 0.95 && json["low"] == .null)
    #expect(json["interval"] == "alwaysValid" && json["notEnoughData"] == true && json["fixedHorizon"] == .null)
    #expect(json["sample"] == ["exposed": 1, "holdout": 1, "minimum": 100])
    #expect(json["exposed"] == ["triggered": 1, "converted": 1, "decided": 1, "pending": 0, "rate": 1])
    #expect(json["perImpression"]?["difference"] == 0.5 && json["perImpression"]?["secondary"] == true)
    #expect(json["perImpression"]?["exposedRate"] == ["converted": 3, "decided": 4, "rate": 0.75])
    // One account a side against equal weights: χ² = 0, nothing flagged.
    #expect(json["srm"]?["observed"] == ["friendly": 1, "control": 1] && json["srm"]?["flagged"] == false)
    #expect(report.json["variants"]?[1]?["holdout"] == true)
  }

  @Test("a variant against the control in one install: the difference, and not enough data for an interval")
  func variantComparison() throws {
    let tip = MetricsTip(id: "filter.tip", goal: filterTip.goal, variants: ["friendly", "direct"])
    var history = History()
    // friendly (the control, declared first): 1 of 4 converted; direct: 3 of 4 — the holdout example's rates.
    // Triggers: friendly displayable at 0 (its goal an hour later: converted), direct at 9 days (its first goal
    // 25 h later: not converted).
    history.displayable(at: 0, variant: "friendly")
    for d in 0..<4 {
      history.impression(at: Double(d) * day, variant: "friendly")
      if d == 0 { history.donate("filter.used", at: Double(d) * day + hour) }
    }
    history.displayable(at: 9 * day, variant: "direct")
    for d in 10..<14 {
      history.impression(at: Double(d) * day, variant: "direct")
      if d < 13 { history.donate("filter.used", at: Double(d) * day + hour) }
    }
    let report = try #require(compute(history, tips: [tip], now: 20 * day).tip("filter.tip"))
    let comparison = try #require(report.comparisons.first)
    #expect(report.comparisons.count == 1)
    #expect(comparison.variant == "direct" && comparison.against == "friendly")
    #expect(comparison.estimate.difference == -1 && comparison.estimate.notEnoughData)
    #expect(comparison.perImpression?.estimate.difference == 0.5)
    let json = try #require(compute(history, tips: [tip], now: 20 * day).json["tips"]?[0])
    #expect(json["comparisons"]?[0]?["variant"] == "direct" && json["comparisons"]?[0]?["difference"] == -1)
    #expect(json["comparisons"]?[0]?["perImpression"]?["difference"] == 0.5)
    #expect(json["comparisons"]?[0]?["sample"] == ["variant": 1, "against": 1, "minimum": 100])
    let friendly = try #require(json["variants"]?[0]?["goal"])
    #expect(friendly["low"] == .null && friendly["accounts"] == 1 && friendly["notEnoughData"] == true)
    // With one variant there is nothing to compare.
    var one = History()
    one.impression(at: 0, variant: "friendly")
    #expect(compute(one, tips: [tip], now: 20 * day).tip("filter.tip")?.variants.count == 2)
    var solo = tip
    solo.variants = ["friendly"]
    #expect(compute(one, tips: [solo], now: 20 * day).tip("filter.tip")?.comparisons.isEmpty == true)
  }

  @Test("across accounts: sums, the median of the accounts' first-use samples, per-account-day goal rates, pooled lift")
  func fleet() throws {
    let tip = MetricsTip(
      id: "filter.tip", goal: filterTip.goal, variants: ["friendly", "control"], holdouts: ["control"])
    // Three accounts, each one install's history.
    var ann = History()  // friendly: converts after 1 h; a second impression 2 days later converts after 3 h.
    ann.displayable(at: 0, variant: "friendly")
    ann.impression(at: 0, variant: "friendly")
    ann.donate("filter.used", at: hour)
    ann.impression(at: 2 * day, variant: "friendly")
    ann.donate("filter.used", at: 2 * day + 3 * hour)
    var bob = History()  // friendly: a goal the day before; the impression never converts (goal 30 h later).
    bob.donate("filter.used", at: 9 * day)
    bob.displayable(at: 10 * day, variant: "friendly")
    bob.impression(at: 10 * day, variant: "friendly")
    bob.donate("filter.used", at: 10 * day + 30 * hour)
    var cat = History()  // held out: a counterfactual impression, no goal yet, an hour before now.
    Self.exposure(&cat, at: 20 * day - hour)
    var fleet = FleetMetrics(tips: [tip], configuration: MetricsConfiguration(), now: History.t0 + 20 * day)
    for account in [ann, bob, cat] { fleet.add(history: account.events, historyStart: account.events.first?.at) }
    let report = fleet.report()
    #expect(report.accounts == 3)
    #expect(report.historyStart == History.t0)
    let overall = try #require(report.tip("filter.tip")?.overall)
    #expect(overall.impressions == 3)
    // Two accounts decided (ann, bob): under the minimum of 100, so no interval.
    #expect(overall.goal == GoalConversion(converted: 2, decided: 3, pending: 0, rate: 2.0 / 3, accounts: 2))
    // First use: ann 1 h, bob 30 h: the median of the two accounts' samples.
    #expect(overall.timeToGoal == TimeToGoal(samples: 2, median: (hour + 30 * hour) / 2, open: 0))
    // Exposures: ann's first (1 h; her second impression came after a goal: 3 h), bob's (30 h).
    #expect(overall.timeToGoalPerExposure == TimeToGoal(samples: 3, median: 3 * hour, open: 0))
    // Goal rates per account-day. Before: ann has no history before her impression (0 days), bob 1 day (from the
    // history's start, his goal, to the impression), 1 goal. After: 7 days each; ann 2 goals, bob 1.
    let rate = try #require(overall.goalRate)
    #expect(rate.firstImpressionAt == History.t0)
    #expect(rate.before?.count == 1 && rate.before?.days == 1 && rate.before?.perDay == 1)
    #expect(rate.after?.count == 3 && rate.after?.days == 14 && rate.after?.perDay == 3.0 / 14)
    #expect(rate.after?.from == History.t0 && rate.after?.to == History.t0 + 17 * day)
    let control = try #require(report.tip("filter.tip")?.variant("control"))
    #expect(control.holdout && control.impressions == 1 && control.goal?.pending == 1)
    #expect(control.timeToGoal == TimeToGoal(samples: 0, median: nil, open: 1))
    let lift = try #require(report.tip("filter.tip")?.lift)
    // Primary: ann converted, bob did not (30 h), cat is pending (an hour into her window).
    #expect(lift.exposed == AccountConversion(triggered: 2, converted: 1, decided: 2, pending: 0))
    #expect(lift.holdout == AccountConversion(triggered: 1, converted: 0, decided: 0, pending: 1))
    #expect(lift.difference == nil && lift.estimate.accounts == 2 && lift.estimate.againstAccounts == 0)
    #expect(lift.srm?.observed == ["friendly": 2, "control": 1] && lift.srm?.flagged == false)
    #expect(
      lift.perImpression?.rate == Proportion(converted: 2, decided: 3)
        && lift.perImpression?.againstRate == Proportion(converted: 0, decided: 0))
    // In results: `accounts`, and `days` read back as account-days.
    #expect(report.json["accounts"] == 3)
    #expect(report.json["tips"]?[0]?["overall"]?["goalRate"]?["after"]?["days"] == 14)
  }
}
