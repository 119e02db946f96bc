import Testing
import TipsEngine
import TipsJSON
import TipsMetrics

@testable import TipsServer

private let t0: Timestamp = 1_000_000
private let day = 86_400.0
private let tip = MetricsTip(
  id: "filter.tip", goal: TipGoal(eventID: "filter.used", within: day), variants: ["friendly", "control"],
  holdouts: ["control"])

/// Account `k` of an arm: triggered (the tip displayable, or the holdout's counterfactual exposure) on day k % 14,
/// doing the goal an hour later when k % 5 == 0 — the same in both arms.
private func account(_ k: Int, held: Bool) -> [HistoryEvent] {
  let trigger = t0 + Double(k % 14) * day
  var events: [HistoryEvent] = [
    held
      ? .exposure(tip: "filter.tip", variant: "control", at: trigger)
      : HistoryEvent(kind: .eligibility, at: trigger, tipID: "filter.tip", variant: "friendly", shouldDisplay: true)
  ]
  if k % 5 == 0 { events.append(.donation(event: "filter.used", at: trigger + 3_600)) }
  for index in events.indices { events[index].cursor = Int64(index + 1) }
  return events
}

private func report(exposed: Int, held: Int) -> MetricsReport {
  var fleet = FleetMetrics(tips: [tip], configuration: MetricsConfiguration(), now: t0 + 30 * day)
  for k in 0..<exposed { fleet.add(history: account(k, held: false), historyStart: nil) }
  for k in 0..<held { fleet.add(history: account(k, held: true), historyStart: nil) }
  return fleet.report()
}

/// Which experiment crossings a fleet report turns into webhook events (#48).
@Suite struct WebhookExperimentTests {
  @Test func aBalancedNullSendsNothing() {
    #expect(ExperimentEvent.crossings(in: report(exposed: 2_000, held: 2_000)).isEmpty)
  }

  @Test func aShortArmIsASampleRatioWarning() throws {
    let events = ExperimentEvent.crossings(in: report(exposed: 2_000, held: 1_600))
    let srm = try #require(events.first { $0.type == "experiment.srm" })
    #expect(srm.key == "filter.tip/lift")
    #expect(srm.data["tip"] == "filter.tip" && srm.data["experiment"] == "lift")
    #expect(!events.contains { $0.type == "experiment.decided" })
  }

  @Test func anIntervalExcludingZeroIsADecision() throws {
    var decided = report(exposed: 2_000, held: 2_000)
    decided.tips[0].lift?.estimate.alwaysValid = Interval(low: 0.01, high: 0.04)
    let events = ExperimentEvent.crossings(in: decided)
    #expect(events.map(\.type) == ["experiment.decided"])
    #expect(events.first?.data["low"] == .double(0.01) && events.first?.data["high"] == .double(0.04))
    decided.tips[0].lift?.estimate.alwaysValid = Interval(low: -0.04, high: -0.01)
    #expect(ExperimentEvent.crossings(in: decided).map(\.type) == ["experiment.decided"])
    decided.tips[0].lift?.estimate.alwaysValid = Interval(low: -0.01, high: 0.04)
    #expect(ExperimentEvent.crossings(in: decided).isEmpty)
  }
}
