import Testing
import TipsEngine
import TipsMetrics

private let t0: Timestamp = 1_000_000
private let day = 86_400.0
private let hour = 3_600.0
private let tip = MetricsTip(
  id: "filter.tip", goal: TipGoal(eventID: "filter.used", within: day), variants: ["friendly", "control"],
  holdouts: ["control"])

/// Account `k` of an arm: triggered on day k % 14 (a variant: the tip became displayable; the holdout: its
/// counterfactual exposure); the goal behaviour after the trigger depends on k alone (the same in both arms):
/// k % 5 == 0 does the goal 1 h after, k % 5 == 1 30 h after (outside the window), the others never. The tip arm's
/// app draws the tip (k % 4) times, 10 minutes apart from the trigger (0: never), and every draw before the goal is an
/// impression that the goal then converts (last touch).
private func account(_ k: Int, held: Bool) -> [HistoryEvent] {
  let trigger = t0 + Double(k % 14) * day + Double(k % 7) * hour
  var events: [HistoryEvent] = []
  if held {
    events.append(.exposure(tip: "filter.tip", variant: "control", at: trigger))
  } else {
    events.append(
      HistoryEvent(kind: .eligibility, at: trigger, tipID: "filter.tip", variant: "friendly", shouldDisplay: true))
    for draw in 0..<(k % 4) {
      events.append(
        .impression(tip: "filter.tip", variant: "friendly", at: trigger + Double(draw) * 600, duration: 2))
    }
  }
  switch k % 5 {
  case 0: events.append(.donation(event: "filter.used", at: trigger + hour))
  case 1: events.append(.donation(event: "filter.used", at: trigger + 30 * hour))
  default: break
  }
  events.sort { $0.at < $1.at }
  for index in events.indices { events[index].cursor = Int64(index + 1) }
  return events
}

private func pool(tip: MetricsTip = tip, exposed: Int, held: Int, options: StatisticsOptions = StatisticsOptions())
  -> TipMetrics?
{
  var fleet = FleetMetrics(
    tips: [tip], configuration: MetricsConfiguration(statistics: options), now: t0 + 30 * day)
  for k in 0..<exposed { fleet.add(history: account(k, held: false), historyStart: nil) }
  for k in 0..<held { fleet.add(history: account(k, held: true), historyStart: nil) }
  return fleet.report().tip("filter.tip")
}

@Suite("Issue #46: one trigger for every arm, the account's conversion, the sample-ratio check, corrections")
struct ExperimentTests {
  @Test("a true null built exactly: the lift is 0 and the sample ratio is fine, though the app draws unevenly")
  func exactNull() throws {
    let lift = try #require(pool(exposed: 2_000, held: 2_000)?.lift)
    #expect(lift.difference == 0)
    #expect(lift.exposed == AccountConversion(triggered: 2_000, converted: 400, decided: 2_000, pending: 0))
    #expect(lift.exposed == lift.holdout)
    let srm = try #require(lift.srm)
    #expect(srm.observed == ["friendly": 2_000, "control": 2_000] && srm.chiSquare == 0 && !srm.flagged)
    #expect(lift.estimate.fixedHorizon?.contains(0) == true && lift.estimate.alwaysValid?.contains(0) == true)
    // The per-impression rate of the same accounts is not 0: the tip arm's accounts that never drew it are not in
    // it, and one that drew it three times counts three impressions (the bias the primary metric removes).
    let secondary = try #require(lift.perImpression?.estimate.difference)
    #expect(abs(secondary) > 0.01, "\(secondary)")
  }

  @Test("one arm's triggered accounts 20% short is flagged (2,000 against 1,600 for equal weights)")
  func shortArm() throws {
    let lift = try #require(pool(exposed: 2_000, held: 1_600)?.lift)
    let srm = try #require(lift.srm)
    // χ² = 2 · 200² / 1,800 = 44.4 on 1 degree of freedom: p = erfc(√(χ²/2)) = 2.6e-11.
    #expect(abs(srm.chiSquare - 400.0 / 9 * 2 / 2) < 1e-9)
    #expect(abs(srm.pValue - 2.616785e-11) < 1e-15 && srm.flagged)
    #expect(srm.expected == ["friendly": 1_800, "control": 1_800])
    // Weights 5:4 expect exactly that split: not flagged.
    var weighted = tip
    weighted.weights = ["friendly": 5, "control": 4]
    let fine = try #require(pool(tip: weighted, exposed: 2_000, held: 1_600)?.lift?.srm)
    #expect(fine.chiSquare < 1e-9 && !fine.flagged)
  }

  @Test("χ² survival and the normal quantile against known values")
  func distributions() {
    // P(χ²₁ ≥ 3.841459) = 0.05; P(χ²₂ ≥ x) = e^(−x/2); P(χ²₃ ≥ 7.814728) = 0.05; P(χ²₁₀ ≥ 2.558212) = 0.99.
    #expect(abs(chiSquareSurvival(3.841_459, degreesOfFreedom: 1) - 0.05) < 1e-7)
    #expect(abs(chiSquareSurvival(13.8, degreesOfFreedom: 2) - 1.007_785e-3) < 1e-9)
    #expect(abs(chiSquareSurvival(7.814_728, degreesOfFreedom: 3) - 0.05) < 1e-7)
    #expect(abs(chiSquareSurvival(2.558_212, degreesOfFreedom: 10) - 0.99) < 1e-7)
    #expect(abs(normalQuantile(0.975) - 1.959_963_984_540_054) < 1e-12)
    #expect(abs(normalQuantile(1 - 0.05 / 4) - 2.241_402_727_604_947) < 1e-12)
    #expect(abs(normalQuantile(1e-6) - -4.753_424_308_822_899) < 1e-10)
  }

  @Test("a tip's comparisons are Bonferroni-corrected together: two variants and a holdout make two comparisons")
  func bonferroni() throws {
    let three = MetricsTip(
      id: "filter.tip", goal: tip.goal, variants: ["friendly", "direct", "control"], holdouts: ["control"])
    var fleet = FleetMetrics(
      tips: [three], configuration: MetricsConfiguration(statistics: StatisticsOptions(minimumAccounts: 2)),
      now: t0 + 30 * day)
    for k in 0..<300 {
      var events = account(k, held: k % 3 == 2)
      if k % 3 == 1 {
        events = events.map {
          var e = $0; if e.variant != nil { e.variant = "direct" }; return e
        }
      }
      fleet.add(history: events, historyStart: nil)
    }
    let report = try #require(fleet.report().tip("filter.tip"))
    let lift = try #require(report.lift)
    let comparison = try #require(report.comparisons.first)
    #expect(lift.estimate.family == 2 && comparison.estimate.family == 2)
    let se = try #require(lift.estimate.standardError)
    let fixed = try #require(lift.estimate.fixedHorizon)
    // z for α/2 = 0.025 two-sided: Φ⁻¹(1 − 0.0125) = 2.241403, not 1.96.
    #expect(abs((fixed.high - fixed.low) / (2 * se) - 2.241_402_727_604_947) < 1e-9)
    let options = StatisticsOptions(minimumAccounts: 2)
    let always = try #require(lift.estimate.alwaysValid)
    let accounts = lift.estimate.accounts + lift.estimate.againstAccounts
    #expect(
      abs((always.high - always.low) / (2 * se) - options.alwaysValidMultiplier(accounts: accounts, family: 2)) < 1e-9)
    #expect(options.alwaysValidMultiplier(accounts: 1_000, family: 2) > options.alwaysValidMultiplier(accounts: 1_000))
    #expect(report.json["lift"]?["correction"] == ["name": "bonferroni", "comparisons": 2, "alpha": 0.025])
    #expect(report.lift?.srm?.observed == ["friendly": 100, "direct": 100, "control": 100])
  }

  @Test("the secondary rate winsorizes heavy accounts: one account's 300 impressions no longer move it")
  func capping() throws {
    // 200 accounts with 2 impressions and 1 conversion; one with 300 impressions, all converted.
    var a = AccountSample()
    for _ in 0..<100 { a += AccountSample(converted: 1, decided: 2) }
    a += AccountSample(converted: 300, decided: 300)
    var b = AccountSample()
    for _ in 0..<100 { b += AccountSample(converted: 1, decided: 2) }
    #expect(abs((a.rate ?? 0) - 400.0 / 500) < 1e-12)  // uncapped: 0.8 against 0.5
    let (ca, cb, cap) = AccountSample.capped(a, b, quantile: 0.99)
    // 201 accounts: nearest rank ⌈0.99 · 201⌉ = 199 is a 2-impression, 1-conversion account.
    #expect(cap == Cap(quantile: 0.99, decided: 2, converted: 1))
    #expect(ca.rate == 0.5 && cb.rate == 0.5 && ca.accounts == 101)
    // Quantile 1 caps nothing.
    let (same, _, none) = AccountSample.capped(a, b, quantile: 1)
    #expect(same.rate == a.rate && none.decided == 300)
  }

  @Test("an account still inside its goal window is pending, and counts in the sample ratio")
  func pending() throws {
    var fleet = FleetMetrics(tips: [tip], configuration: MetricsConfiguration(), now: t0 + 2 * hour)
    fleet.add(history: account(0, held: false), historyStart: nil)  // triggered at t0, goal 1 h after: converted
    fleet.add(history: account(14, held: true), historyStart: nil)  // triggered at t0, no goal yet 2 h in: pending
    let lift = try #require(fleet.report().tip("filter.tip")?.lift)
    #expect(lift.exposed == AccountConversion(triggered: 1, converted: 1, decided: 1, pending: 0))
    #expect(lift.holdout == AccountConversion(triggered: 1, converted: 0, decided: 0, pending: 1))
    #expect(lift.srm?.observed == ["friendly": 1, "control": 1])
  }
}
