import Testing
import TipsEngine
import TipsJSON
import TipsLogging
import TipsTestSupport

@testable import TipsServer

/// Time moves one way through the server (#45): `clock/advance` and a late system-clock timer apply each time-driven
/// change at its own instant — notified in order, recorded in the history with that instant.
@Suite struct ClockStepTests {
  static let start = 1_700_000_000.0

  @Test("clock/advance over a suppression's end: the exposure and the eligibility entries carry its instant")
  func advanceStampsEachInstant() throws {
    let fixture = try TestServer {
      $0.clock = .virtual(start: Self.start)
      $0.allowTesting = true
    }
    let client = try fixture.connect()
    let held: JSONValue = [
      "id": "t6", "title": "T6", "variants": ["shown": ["title": "S"], "held": ["holdout": true]],
    ]
    try client.result("tips/register", ["tips": [["id": "t1", "title": "T1"], held]])
    try client.result("tips/setVariant", ["id": "t6", "variant": "held"])
    try client.result("tips/suppress", ["seconds": 5_400.5])
    try client.result("tips/observe", ["ids": ["t1", "t6"]])
    try client.read()
    _ = client.takeShouldDisplay()
    let opened = Self.start + 5_400.5
    try client.result("clock/advance", ["seconds": 700_000.25])
    try client.read()
    #expect(client.takeShouldDisplay().map(\.value) == [true], "t1 shows again when the suppression ends")
    let events = try client.result("analytics/read")["events"]?.arrayValue ?? []
    let exposures = events.filter { $0["type"] == "exposure" && $0["tipId"] == "t6" }
    #expect(exposures.last?["at"]?.doubleValue == opened, "\(exposures)")
    let shown = events.filter { $0["type"] == "eligibility" && $0["tipId"] == "t1" && $0["shouldDisplay"] == true }
    #expect(shown.last?["at"]?.doubleValue == opened, "\(shown)")
  }

  /// A schedule that opens at +100 and closes at +200 on an engine driven by the system-clock driver.
  static func scheduled(_ clock: VirtualClock) throws -> Engine {
    let engine = Engine(clock: clock)
    let tip: JSONValue = [
      "id": "sale", "title": "Sale",
      "schedule": ["from": .string(ISO8601.string(from: 1_100)), "until": .string(ISO8601.string(from: 1_200))],
    ]
    _ = try engine.register([try TipDefinition(json: tip, path: "tip")])
    return engine
  }

  @Test("a timer that fires late (a laptop that slept) replays each missed instant at itself, in order")
  func aLateTimerReplaysMissedInstants() throws {
    let loop = EmbeddedEventLoop()
    let clock = VirtualClock(now: 1_000)
    let engine = try Self.scheduled(clock)
    var passed: [Mutation] = []
    let driver = TimeDriver(timer: loop.makeTimer(), engine: engine, logger: Logger(level: .error)) {
      passed.append($0)
    }
    driver.reschedule()
    // The wall clock jumps past both instants while the loop's timer waited.
    clock.set(5_000)
    loop.advance(by: 100_001)
    let stamped = passed.filter { !$0.changes.isEmpty }.map { ($0.at, $0.changes) }
    #expect(stamped.map(\.0) == [1_100, 1_200])
    #expect(
      stamped.map { $0.1 } == [
        [.tip(TipState(id: "sale", status: .available, shouldDisplay: true))],
        [.tip(TipState(id: "sale", status: .pending, shouldDisplay: false))],
      ])
  }

  @Test("input that arrives before a late timer is preceded by the instants it missed (catchUp)")
  func catchUpBeforeInput() throws {
    let loop = EmbeddedEventLoop()
    let clock = VirtualClock(now: 1_000)
    let engine = try Self.scheduled(clock)
    var passed: [Mutation] = []
    let driver = TimeDriver(timer: loop.makeTimer(), engine: engine, logger: Logger(level: .error)) {
      passed.append($0)
    }
    driver.reschedule()
    clock.set(1_150)
    driver.catchUp()
    #expect(passed.compactMap(\.at) == [1_100])
    #expect(engine.state(of: "sale")?.shouldDisplay == true)
    // Nothing is due any more: another catch-up does nothing.
    passed = []
    driver.catchUp()
    #expect(passed.isEmpty)
  }
}
