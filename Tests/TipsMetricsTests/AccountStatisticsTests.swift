import Testing
import TipsEngine
import TipsMetrics

private let t0: Timestamp = 1_000_000
private let day = 86_400.0
private let tip = MetricsTip(
  id: "filter.tip", goal: TipGoal(eventID: "filter.used", within: day), variants: ["friendly", "control"],
  holdouts: ["control"])

/// One account's history: `pre` goal donations in the week before its first exposure, then (a variant's) the tip
/// becoming displayable — the trigger — and `decided` impressions (counterfactual ones for the holdout, the first
/// its trigger) 26 h apart, the first `converted` of them followed by the goal an hour later. So the account
/// converted by the primary metric when `converted` > 0.
private func account(_ variant: String, converted: Int, decided: Int, pre: Int) -> [HistoryEvent] {
  var events: [HistoryEvent] = []
  func add(_ event: HistoryEvent) {
    var event = event
    event.cursor = Int64(events.count + 1)
    events.append(event)
  }
  let start = t0 + 10 * day
  for k in 0..<pre { add(.donation(event: "filter.used", at: start - Double(k + 1) * day / 2)) }
  events.sort { $0.at < $1.at }
  for index in events.indices { events[index].cursor = Int64(index + 1) }
  if variant != "control" {
    add(HistoryEvent(kind: .eligibility, at: start, tipID: "filter.tip", variant: variant, shouldDisplay: true))
  }
  for k in 0..<decided {
    let at = start + Double(k) * 26 * 3_600
    add(
      variant == "control"
        ? .exposure(tip: "filter.tip", variant: variant, at: at)
        : .impression(tip: "filter.tip", variant: variant, at: at, duration: 2))
    if k < converted { add(.donation(event: "filter.used", at: at + 3_600)) }
  }
  return events
}

/// Exposed accounts (converted, decided, covariate) (1, 2, 2), (0, 1, 0), (3, 4, 5); held out (0, 2, 0), (1, 3, 1),
/// (0, 1, 0) — the figures below are worked from these by hand.
private func pool(_ options: StatisticsOptions) -> MetricsReport {
  var fleet = FleetMetrics(
    tips: [tip], configuration: MetricsConfiguration(statistics: options), now: t0 + 40 * day)
  for (variant, c, n, x) in [
    ("friendly", 1, 2, 2), ("friendly", 0, 1, 0), ("friendly", 3, 4, 5), ("control", 0, 2, 0), ("control", 1, 3, 1),
    ("control", 0, 1, 0),
  ] {
    let history = account(variant, converted: c, decided: n, pre: x)
    fleet.add(history: history, historyStart: history.first?.at)
  }
  return fleet.report()
}

@Suite("Issue #38: the account is the unit — delta method, confidence sequence, CUPED, worked by hand")
struct AccountStatisticsTests {
  @Test("a rate over accounts: the ratio of sums with the delta method's standard error")
  func rate() throws {
    let report = pool(StatisticsOptions(minimumAccounts: 3))
    let goal = try #require(report.tip("filter.tip")?.variant("friendly")?.goal)
    // R = 4 / 7; n̄ = 7/3; lᵢ = (cᵢ − R nᵢ) / n̄ = −3/49, −12/49, 15/49; Var(l) = (9 + 144 + 225) / 49² / 2 = 0.078717;
    // SE = √(0.078717 / 3) = 0.161985; 4/7 ± 1.96 · SE = [0.253944, 0.888913].
    #expect(goal.converted == 4 && goal.decided == 7 && goal.accounts == 3)
    let interval = try #require(goal.interval)
    #expect(abs(interval.low - 0.253944) < 1e-6 && abs(interval.high - 0.888913) < 1e-6, "\(interval)")
    // Under the minimum: the counts, no interval.
    let few = pool(StatisticsOptions(minimumAccounts: 4)).tip("filter.tip")?.variant("friendly")?.goal
    #expect(few?.interval == nil && few?.accounts == 3 && few?.rate == 4.0 / 7)
    #expect(report.json["tips"]?[0]?["variants"]?[0]?["goal"]?["notEnoughData"] == false)
  }

  @Test("the lift: accounts converted after their trigger, a difference of means, and its relative form")
  func primary() throws {
    let lift = try #require(pool(StatisticsOptions(minimumAccounts: 3)).tip("filter.tip")?.lift)
    // Exposed accounts converted 1, 0, 1; held out 0, 1, 0 (a 0/1 per account): d = 2/3 − 1/3;
    // SE = √(s²ₐ/3 + s²ᵦ/3) = √(1/9 + 1/9) = 0.471405 (s² = 1/3 on both sides).
    #expect(lift.exposed == AccountConversion(triggered: 3, converted: 2, decided: 3, pending: 0))
    #expect(abs((lift.difference ?? 0) - 1.0 / 3) < 1e-12)
    #expect(abs((lift.estimate.standardError ?? 0) - 0.471405) < 1e-6)
    // Relative: (2/3) / (1/3) − 1 = 1 (a fraction), SE by the delta method √(Var(a)/b² + a² Var(b)/b⁴) = √5.
    let relative = try #require(lift.estimate.relative)
    #expect(abs(relative.estimate - 1) < 1e-12 && abs(relative.standardError - 5.0.squareRoot()) < 1e-9)
    #expect(abs(relative.fixedHorizon.low - -3.382613) < 1e-6 && abs(relative.fixedHorizon.high - 5.382613) < 1e-6)
    // One comparison (the lift): no correction.
    #expect(lift.estimate.family == 1)
  }

  @Test("the lift per impression (secondary): fixed-horizon and always-valid intervals from both arms' accounts")
  func lift() throws {
    let options = StatisticsOptions(minimumAccounts: 3, plannedAccounts: 1_000)
    let perImpression = try #require(pool(options).tip("filter.tip")?.lift?.perImpression)
    // Six accounts: the 99% cap is the largest account (nearest rank 6 of 6), so nothing is capped.
    #expect(perImpression.cap == Cap(quantile: 0.99, decided: 4, converted: 3))
    let lift = (
      difference: perImpression.estimate.difference, estimate: perImpression.estimate,
      interval: perImpression.estimate.alwaysValid
    )
    // Held out: R = 1/6, n̄ = 2, l = −1/6, 1/4, −1/12, Var(l) = (1/36 + 1/16 + 1/144) / 2 = 0.048611.
    // d = 4/7 − 1/6 = 0.404762; SE = √(0.078717 / 3 + 0.048611 / 3) = 0.206016.
    #expect(abs((lift.difference ?? 0) - 0.404762) < 1e-6)
    #expect(abs((lift.estimate.standardError ?? 0) - 0.206016) < 1e-6)
    let fixed = try #require(lift.estimate.fixedHorizon)
    #expect(abs(fixed.low - 0.000977) < 1e-6 && abs(fixed.high - 0.808547) < 1e-6, "\(fixed)")
    // ρ² = (−2 log 0.05 + log(−2 log 0.05 + 1)) / 1000 = 7.936156 / 1000; x = 6ρ² = 0.047617;
    // multiplier √((x + 1) / x · log((x + 1) / 0.05²)) = 11.525678: six accounts say almost nothing, always.
    #expect(abs(options.rho - 0.089085) < 1e-6)
    #expect(abs(options.alwaysValidMultiplier(accounts: 6) - 11.525678) < 1e-5)
    // At the planned sample the multiplier is 3.035 (against 1.96 looked at once).
    #expect(abs(options.alwaysValidMultiplier(accounts: 1_000) - 3.035209) < 1e-5)
    let always = try #require(lift.interval)
    #expect(abs(always.low - -1.969717) < 1e-5 && abs(always.high - 2.779241) < 1e-5, "\(always)")
    #expect(lift.estimate.cuped == nil)
  }

  @Test("CUPED: the pre-trigger goal donations as covariate, θ, the adjusted lift and the variance reduction")
  func cuped() throws {
    let report = pool(StatisticsOptions(minimumAccounts: 3, cuped: true))
    let cuped = try #require(report.tip("filter.tip")?.lift?.estimate.cuped)
    // Converted 1, 0, 1 with x = 2, 0, 5; 0, 1, 0 with x = 0, 1, 0. θ = Σ Cov(y, x)/N / Σ Var(x)/N = 0.225;
    // d − θ(7/3 − 1/3) = 1/3 − 0.45 = −0.116667; SE 0.331243, so the variance is 50.6% smaller.
    #expect(abs(cuped.theta - 0.225) < 1e-6)
    #expect(abs(cuped.difference - -0.116667) < 1e-6)
    #expect(abs(cuped.standardError - 0.331243) < 1e-6)
    #expect(abs(cuped.varianceReduction - 0.50625) < 1e-6)
    #expect(abs(cuped.fixedHorizon.low - -0.765892) < 1e-6 && abs(cuped.fixedHorizon.high - 0.532559) < 1e-6)
    let json = try #require(report.json["tips"]?[0]?["lift"]?["cuped"])
    #expect(json["varianceReduction"] == .double(0.50625))
    #expect(report.json["method"]?["cuped"] == ["covariate": "goalDonationsBeforeTrigger", "days": 7])
    // The same pooled report asked again with CUPED (the hosted handler's path) gives the same figures.
    let again = pool(StatisticsOptions(minimumAccounts: 3)).applying(StatisticsOptions(minimumAccounts: 3, cuped: true))
    #expect(again.tip("filter.tip")?.lift?.estimate.cuped == cuped)
  }

  @Test("variant comparisons are account-level too")
  func comparisons() throws {
    let both = MetricsTip(id: "filter.tip", goal: tip.goal, variants: ["friendly", "direct"])
    var fleet = FleetMetrics(
      tips: [both], configuration: MetricsConfiguration(statistics: StatisticsOptions(minimumAccounts: 2)),
      now: t0 + 40 * day)
    for (variant, c, n) in [
      ("friendly", 1, 2), ("friendly", 0, 1), ("friendly", 3, 4), ("direct", 0, 2), ("direct", 1, 3),
    ] {
      let history = account(variant, converted: c, decided: n, pre: 0)
      fleet.add(history: history, historyStart: history.first?.at)
    }
    let found = try #require(fleet.report().tip("filter.tip")?.comparisons.first)
    #expect(found.variant == "direct" && found.against == "friendly")
    // Primary: direct converted 0, 1; friendly 1, 0, 1: 1/2 − 2/3.
    #expect(abs((found.estimate.difference ?? 0) - -1.0 / 6) < 1e-12)
    let comparison = (variant: found.variant, estimate: try #require(found.perImpression?.estimate))
    #expect(comparison.estimate.accounts == 2 && comparison.estimate.againstAccounts == 3)
    // direct: R = 1/5, n̄ = 5/2, l = (0 − 2/5)/(5/2), (1 − 3/5)/(5/2) = −0.16, 0.16; Var(l) = 0.0512.
    // d = 1/5 − 4/7 = −0.371429; SE = √(0.0512 / 2 + 0.078717 / 3) = 0.227682.
    #expect(abs((comparison.estimate.difference ?? 0) - -0.371429) < 1e-6)
    #expect(abs((comparison.estimate.standardError ?? 0) - 0.227682) < 1e-6)
  }

  @Test("no interval from a degenerate sample: nothing decided, one account, or none on a side")
  func degenerate() {
    let options = StatisticsOptions(minimumAccounts: 1)
    #expect(AccountSample().estimate(minimum: 1).rate == nil)
    #expect(AccountSample(converted: 1, decided: 2).estimate(minimum: 1).bounds == nil)  // one account: no variance
    #expect(AccountSample(converted: 0, decided: 0).accounts == 0)
    let one = AccountSample(converted: 1, decided: 2) + AccountSample(converted: 0, decided: 2)
    #expect(AccountSample.difference(one, AccountSample(), options: options).difference == nil)
    #expect(AccountSample.difference(one, one, options: options).fixedHorizon != nil)
  }
}
