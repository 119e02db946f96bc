// tipsd-metrics-pool — the statistics simulation's door into TipsMetrics (Tests/Simulation/simulate.py, issue #38).
//
// Reads JSON lines on stdin and pools simulated accounts exactly as hosted mode's admin `metrics/get` pools stored
// ones (``FleetMetrics``: each account's history computed on its own by ``Metrics``, then pooled):
//
//   {"pool": {"variants": ["a", "h"], "holdouts": ["h"], "now": T, "cuped": false,
//             "minimumAccounts": 100, "plannedAccounts": 1000}}      a new pool of accounts (one tip, `sim.tip`, whose
//                                                                    goal is `sim.goal` within 24 h)
//   {"account": {"variant": "a", "impressions": [t, …], "goals": [t, …]}}
//                                                                    one account's history: its impressions (the
//                                                                    holdout's: counterfactual ones) and its goal
//                                                                    donations, instants in seconds
//   {"report": true}                                                 prints the pool's `metrics/get` result (one line)
//
// Nothing here computes a statistic: the daemon's code does, and the Python side judges the figures.
import TipsEngine
import TipsJSON
import TipsMetrics

enum PoolError: Error { case bad(String) }

func numbers(_ value: JSONValue?) -> [Double] { value?.arrayValue?.compactMap(\.doubleValue) ?? [] }

var fleet: FleetMetrics?
let goal = TipGoal(eventID: "sim.goal", within: 86_400)

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
    let tip = MetricsTip(id: "sim.tip", goal: goal, variants: variants, holdouts: holdouts)
    let options = StatisticsOptions(
      minimumAccounts: Int(pool["minimumAccounts"]?.intValue ?? 100),
      plannedAccounts: Int(pool["plannedAccounts"]?.intValue ?? 1_000), cuped: pool["cuped"]?.boolValue ?? false)
    fleet = FleetMetrics(
      tips: [tip], configuration: MetricsConfiguration(statistics: options), now: pool["now"]?.doubleValue ?? 0)
  } else if let account = message["account"] {
    let variant = account["variant"]?.stringValue ?? ""
    let held = fleet?.tips.first?.holdouts.contains(variant) ?? false
    var events: [HistoryEvent] = []
    for at in numbers(account["impressions"]) {
      events.append(
        held
          ? .exposure(tip: "sim.tip", variant: variant, at: at)
          : .impression(tip: "sim.tip", variant: variant, at: at, duration: 2))
    }
    for at in numbers(account["goals"]) { events.append(.donation(event: "sim.goal", at: at)) }
    // History order: by instant, an impression before a goal donated in the same instant.
    events.sort { ($0.at, $0.kind == .donation ? 1 : 0) < ($1.at, $1.kind == .donation ? 1 : 0) }
    for index in events.indices { events[index].cursor = Int64(index + 1) }
    fleet?.add(history: events, historyStart: events.first?.at)
  } else if message["report"] != nil {
    print(fleet?.report().json.jsonString ?? "null")
  }
}
