// tipsd-metrics-pool — the statistics simulation's door into TipsMetrics (protocol/tests/stats_simulation.py, issues
// #38 and #46).
//
// Reads JSON lines on stdin and pools simulated accounts exactly as hosted mode's admin `metrics/get` pools stored
// ones (``FleetMetrics``: each account's history computed on its own by ``Metrics``, then pooled):
//
//   {"pool": {"variants": ["a", "h"], "holdouts": ["h"], "weights": {"a": 1, "h": 1}, "cuped": false,
//             "minimumAccounts": 100, "plannedAccounts": 1000}}      a new pool of accounts (one tip, `sim.tip`, whose
//                                                                    goal is `sim.goal` within 24 h)
//   {"account": {"variant": "a", "displayable": [t, …], "impressions": [t, …], "goals": [t, …]}}
//                                                                    one account's whole history, kept: the instants
//                                                                    the tip became displayable (a variant: an
//                                                                    `eligibility` entry with shouldDisplay true,
//                                                                    false again an hour later; a holdout: a
//                                                                    counterfactual `exposure`), the app's draws
//                                                                    (`tips/displayed`), the goal donations
//   {"report": {"now": T}}                                           prints the pool's `metrics/get` result (one line)
//                                                                    as the daemon would compute it at T: every
//                                                                    account's history up to T, the clock at T
//   {"srm": {"observed": {"a": n, …}, "weights": {"a": 1, …}}}       prints the sample-ratio check of those counts
//
// Nothing here computes a statistic: the daemon's code does, and the Python side judges the figures.
import TipsEngine
import TipsJSON
import TipsMetrics

func numbers(_ value: JSONValue?) -> [Double] { value?.arrayValue?.compactMap(\.doubleValue) ?? [] }

let goal = TipGoal(eventID: "sim.goal", within: 86_400)
var tip = MetricsTip(id: "sim.tip", goal: goal)
var configuration = MetricsConfiguration()
var accounts: [[HistoryEvent]] = []

func weights(_ value: JSONValue?) -> [String: Double] {
  var out: [String: Double] = [:]
  for (key, weight) in value?.objectValue ?? [:] { out[key] = weight.doubleValue ?? 1 }
  return out
}

while let line = readLine() {
  guard !line.isEmpty else { continue }
  let message: JSONValue
  do {
    message = try JSONParser().parse(line)
  } catch {
    print("{\"error\": \"unreadable line\"}")
    continue
  }
  if let pool = message["pool"] {
    let variants = pool["variants"]?.arrayValue?.compactMap(\.stringValue) ?? []
    let holdouts = Set(pool["holdouts"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    tip = MetricsTip(
      id: "sim.tip", goal: goal, variants: variants, holdouts: holdouts, weights: weights(pool["weights"]))
    let options = StatisticsOptions(
      minimumAccounts: Int(pool["minimumAccounts"]?.intValue ?? 100),
      plannedAccounts: Int(pool["plannedAccounts"]?.intValue ?? 1_000), cuped: pool["cuped"]?.boolValue ?? false)
    configuration = MetricsConfiguration(statistics: options)
    accounts = []
  } else if let account = message["account"] {
    let variant = account["variant"]?.stringValue ?? ""
    let held = tip.holdouts.contains(variant)
    // (instant, order within the instant, entry): the tip becomes displayable before it is drawn, a goal donated
    // in the same instant comes after both.
    var events: [(Double, Int, HistoryEvent)] = []
    for at in numbers(account["displayable"]) {
      if held {
        events.append((at, 0, .exposure(tip: "sim.tip", variant: variant, at: at)))
      } else {
        events.append(
          (at, 0, HistoryEvent(kind: .eligibility, at: at, tipID: "sim.tip", variant: variant, shouldDisplay: true)))
        events.append(
          (
            at + 3_600, 0,
            HistoryEvent(kind: .eligibility, at: at + 3_600, tipID: "sim.tip", variant: variant, shouldDisplay: false)
          ))
      }
    }
    for at in numbers(account["impressions"]) {
      events.append((at, 1, .impression(tip: "sim.tip", variant: variant, at: at, duration: 2)))
    }
    for at in numbers(account["goals"]) { events.append((at, 2, .donation(event: "sim.goal", at: at))) }
    events.sort { ($0.0, $0.1) < ($1.0, $1.1) }
    var history = events.map(\.2)
    for index in history.indices { history[index].cursor = Int64(index + 1) }
    accounts.append(history)
  } else if let report = message["report"] {
    let now = report["now"]?.doubleValue ?? .infinity
    var fleet = FleetMetrics(tips: [tip], configuration: configuration, now: now)
    for history in accounts {
      // The history as stored at `now`: what happened by then.
      var end = history.count
      while end > 0 && history[end - 1].at > now { end -= 1 }
      guard end > 0 else { continue }
      fleet.add(history: Array(history[..<end]), historyStart: history.first?.at)
    }
    print(fleet.report().json.jsonString)
  } else if let srm = message["srm"] {
    let observed = (srm["observed"]?.objectValue ?? [:]).map { ($0.key, Int($0.value.intValue ?? 0)) }
    print(SampleRatio(observed: observed, weights: weights(srm["weights"]))?.json.jsonString ?? "null")
  }
}
