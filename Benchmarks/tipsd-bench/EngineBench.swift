import Glibc
import TipsEngine
import TipsJSON

// Engine benchmarks (`tipsd-bench engine`): the per-donation cost with 10 and 100,000 registered tips (10 of them
// reading the donated event in both), their ratio, and the resident memory of 100,000 tips with 1,000,000 donations.

/// Runs the engine suite and prints `name: value` lines.
func runEngineBenchmarks() throws {
  // Memory first, while the heap is fresh, so freed memory of other runs cannot hide the growth.
  let memory = try EngineBench.memoryMegabytes(tips: 100_000, events: 1_000, donationsPerEvent: 1_000)
  let small = try EngineBench.donationMicroseconds(registeredTips: 10)
  let large = try EngineBench.donationMicroseconds(registeredTips: 100_000)
  EngineBench.report("engine.donate_us_10_tips", small)
  EngineBench.report("engine.donate_us_100000_tips", large)
  EngineBench.report("engine.donate_us_target", 5)
  EngineBench.report("engine.donate_ratio", large / small)
  EngineBench.report("engine.donate_ratio_target", 1.5)
  EngineBench.report("engine.memory_mb_100000_tips_1000000_donations", memory)
  EngineBench.report("engine.memory_mb_target", 200)
}

enum EngineBench {
  static func report(_ name: String, _ value: Double) {
    let rounded = (value * 1_000).rounded() / 1_000
    print("\(name): \(rounded)")
  }

  /// Resident memory of the process in bytes (`/proc/self/statm`, second field, in pages).
  static func residentBytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var size = 0
    var resident = 0
    guard
      withUnsafeMutablePointer(
        to: &size,
        { sizePointer in
          withUnsafeMutablePointer(to: &resident) { residentPointer in
            withVaList([sizePointer, residentPointer]) { vfscanf(file, "%ld %ld", $0) }
          }
        }) == 2
    else { return 0 }
    return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
  }

  /// The ten tips that read the hot event: a mix of plain counts, a window, a filter and combinators.
  static func hotTips() throws -> [TipDefinition] {
    let rules = [
      #"[{"event": "hot", "count": {"gte": 3}}]"#,
      #"[{"event": "hot", "count": {"gte": 3}}, {"event": "cold", "count": {"eq": 0}}]"#,
      #"[{"event": "hot", "within": {"days": 1}, "count": {"gte": 1}}]"#,
      #"[{"event": "hot", "count": {"lt": 5}}]"#,
      #"[{"not": {"event": "hot", "count": {"eq": 0}}}]"#,
      #"[{"anyOf": [{"event": "hot", "count": {"gt": 10}}, {"parameter": "flag", "eq": true}]}]"#,
      #"[{"event": "hot", "count": {"gte": 1}}, {"parameter": "level", "gte": 0}]"#,
      #"[{"allOf": [{"event": "hot", "count": {"gte": 2}}, "#
        + #"{"event": "hot", "within": {"hours": 1}, "count": {"gte": 1}}]}]"#,
      #"[{"event": "hot", "count": {"ne": 7}}]"#,
      #"[{"event": "hot", "count": {"gte": 100}}]"#,
    ]
    return try rules.enumerated().map { index, rules in
      try TipDefinition(
        json: JSONParser.parse(#"{"id": "hot.\#(index)", "title": "Hot \#(index)", "rules": \#(rules)}"#), path: "hot")
    }
  }

  /// A tip that reads one of 1,000 other events.
  static func coldTip(_ index: Int) -> TipDefinition {
    TipDefinition(
      id: "cold.\(index)", title: "Cold tip \(index)",
      rules: [.event(EventRule(eventID: "event.\(index % 1_000)", countOperator: .gte, countValue: 3))])
  }

  /// Mean microseconds per donation of the hot event, best of three rounds.
  static func donationMicroseconds(registeredTips: Int) throws -> Double {
    let clock = VirtualClock(now: 1_700_000_000)
    let engine = Engine(clock: clock)
    var tips = try hotTips()
    for index in 0..<(registeredTips - tips.count) { tips.append(coldTip(index)) }
    _ = try engine.register(tips)
    for _ in 0..<2_000 {
      clock.advance(by: 0.5)
      _ = try! engine.donate("hot")
    }
    var best = Double.infinity
    let donations = 50_000
    var sink = 0
    for _ in 0..<3 {
      let start = monotonic()
      for _ in 0..<donations {
        clock.advance(by: 0.5)
        let result = try! engine.donate("hot")
        sink &+= result.count &+ result.mutation.changes.count
      }
      best = min(best, (monotonic() - start) / Double(donations) * 1_000_000)
    }
    if sink == 42 { print("#") }
    return best
  }

  /// Resident megabytes an engine with `tips` tips and `events` × `donationsPerEvent` donations adds.
  static func memoryMegabytes(tips: Int, events: Int, donationsPerEvent: Int) throws -> Double {
    let before = residentBytes()
    let clock = VirtualClock(now: 1_700_000_000)
    let engine = Engine(clock: clock)
    var definitions = try hotTips()
    for index in 0..<(tips - definitions.count) { definitions.append(coldTip(index)) }
    _ = try engine.register(definitions)
    definitions = []
    let info: JSONObject = ["region": "north"]
    for round in 0..<donationsPerEvent {
      for event in 0..<events {
        clock.advance(by: 0.01)
        _ = try! engine.donate("event.\(event)", info: event % 10 == 0 ? info : nil)
      }
      if round == 0 { _ = engine.nextChangeTime() }
    }
    let after = residentBytes()
    withExtendedLifetime(engine) {}
    return Double(after - before) / 1_048_576
  }
}
