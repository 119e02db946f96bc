import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsTestSupport

@testable import TipsServer
@testable import TipsStore

/// The lifecycle history follows what the datastore holds (issue #30): after a failed commit the daemon goes on as if
/// the lost requests had never been made, and retention applies to everything stored, whatever the setting was when
/// it was written. In process, on the embedded loop.
@Suite struct HistoryIntegrityTests {
  static let start = 1_000_000.0
  static let day = 86_400.0

  static func fixture(
    start: Double = start, _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }
  ) throws -> TestServer {
    try TestServer {
      $0.clock = .virtual(start: start)
      $0.allowTesting = true
      configure(&$0)
    }
  }

  // MARK: A failed commit

  /// What a run leaves for analytics: every `analytics/event` a live subscriber received, `analytics/read` from the
  /// start, `metrics/get`, and the tips' states.
  struct Outcome: Equatable {
    var stream: [JSONValue]
    var read: [JSONValue]
    var metrics: JSONValue
    var status: JSONValue
  }

  /// A sequence of eligibility changes, impressions, a goal and an action on two tips; with `losing`, one turn in
  /// the middle (donations, an impression, parameter changes: filter.tip becomes available and is displayed,
  /// toggle.tip goes back to pending) fails to commit: its last request does not fit in the capped file.
  static func run(losing: Bool) throws -> Outcome {
    let fixture = try Self.fixture { $0.datastoreMaxPages = 60 }
    let client = try fixture.connect()
    let analytics = try fixture.connect()
    try analytics.result("analytics/subscribe")
    try client.result(
      "parameters/define", ["parameters": [["id": "flag", "default": false], ["id": "big", "default": ""]]])
    try client.result("tips/register", ["tips": [MeasuringTests.filterTip, toggleTip]])
    for _ in 0..<2 { try client.result("events/donate", ["id": "search.opened"]) }
    try client.result("parameters/set", ["id": "flag", "value": true])
    try client.result("clock/advance", ["seconds": 60])
    if losing {
      let lost = [
        client.sendRequest("events/donate", ["id": "search.opened"]),
        client.sendRequest("tips/displayed", ["id": "filter.tip", "duration": 3]),
        client.sendRequest("events/donate", ["id": "filter.used"]),
        client.sendRequest("parameters/set", ["id": "flag", "value": false]),
        client.sendRequest("parameters/set", ["id": "big", "value": .string(String(repeating: "x", count: 400_000))]),
      ]
      try client.flush()
      for id in lost { #expect(try client.takeReply(id: id)["error"]?["code"] == -32005, "request \(id)") }
      #expect(fixture.logged("datastore commit failed", level: .error))
    }
    try client.result("clock/advance", ["seconds": 60])
    try client.result("tips/displayed", ["id": "toggle.tip", "duration": 2])
    try client.result("parameters/set", ["id": "flag", "value": false])
    try client.result("events/donate", ["id": "search.opened"])
    try client.result("tips/displayed", ["id": "filter.tip", "duration": 5])
    try client.result("clock/advance", ["seconds": 600])
    try client.result("events/donate", ["id": "filter.used"])
    try client.result("tips/performAction", ["id": "filter.tip", "actionId": "learn-more"])
    try client.result("parameters/set", ["id": "flag", "value": true])
    try analytics.flush()
    return Outcome(
      stream: analytics.takeNotifications("analytics/event").compactMap { $0["params"] },
      read: try MeasuringTests.read(client),
      metrics: try client.result("metrics/get"),
      status: try client.result("tips/status"))
  }

  @Test func afterAFailedCommitTheHistoryAndMetricsAreThoseOfARunWithoutTheLostRequests() throws {
    let clean = try Self.run(losing: false)
    let failed = try Self.run(losing: true)
    #expect(failed == clean)
    // What the clean run recorded (so the comparison is not between two empty runs).
    #expect(
      MeasuringTests.types(clean.read) == [
        "eligibility", "eligibility",  // registered: both pending
        "eligibility",  // flag: toggle.tip available
        "impression", "eligibility",  // toggle.tip displayed; flag off: pending
        "eligibility", "impression",  // 3 searches: filter.tip available; displayed
        "action", "invalidation", "eligibility",  // learn-more
        "eligibility",  // flag: toggle.tip available
      ])
    #expect(clean.stream.map { $0["cursor"] } == clean.read.map { $0["cursor"] })
    #expect(clean.read.map { $0["cursor"]?.intValue } == [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12])  // 8: the goal donation
    let report = try #require(clean.metrics["tips"]?[0])
    #expect(report["tipId"] == "filter.tip" && report["overall"]?["impressions"] == 1, "\(clean.metrics)")
  }

  /// The engine, too, is what the datastore holds after a failed commit: a lost donation does not count, a lost
  /// parameter change is undone (an observer told of it is told of its reversal), and what is not durable stays.
  @Test func aFailedCommitIsUndoneInTheEngine() throws {
    let fixture = try Self.fixture { $0.datastoreMaxPages = 60 }
    let client = try fixture.connect()
    let observer = try fixture.connect()
    try client.result(
      "parameters/define",
      [
        "parameters": [
          ["id": "flag", "default": false], ["id": "big", "default": ""],
          ["id": "mode", "default": "a", "transient": true],
        ]
      ])
    try client.result("tips/register", ["tips": [toggleTip]])
    try observer.result("tips/observe", ["ids": ["toggle.tip"]])
    try client.result("events/donate", ["id": "search.opened"])
    try client.result("parameters/set", ["id": "mode", "value": "b"])
    let lost = [
      client.sendRequest("events/donate", ["id": "search.opened"]),
      client.sendRequest("parameters/set", ["id": "flag", "value": true]),
      client.sendRequest("parameters/set", ["id": "big", "value": .string(String(repeating: "x", count: 400_000))]),
    ]
    try client.flush()
    for id in lost { #expect(try client.takeReply(id: id)["error"]?["code"] == -32005, "request \(id)") }
    try observer.flush()
    #expect(observer.takeShouldDisplay().map(\.value) == [true, false])
    #expect(try client.result("tips/status", ["ids": ["toggle.tip"]])["tips"]?[0]?["shouldDisplay"] == false)
    #expect(try client.result("events/donate", ["id": "search.opened"]) == ["count": 2, "lifetime": 2])
    let parameters = try client.result("inspect/state")["parameters"]?.arrayValue ?? []
    #expect(parameters.first { $0["id"] == "flag" }?["value"] == false)
    #expect(parameters.first { $0["id"] == "mode" }?["value"] == "b", "a transient value is not the datastore's")
  }

  // MARK: Retention

  /// The stored history, read from the file itself with SQLite (not through a `Datastore`, which would take the
  /// daemon's lock): each entry's (cursor, at), the cursor pruning kept, and how many tips have a last recorded
  /// eligibility.
  static func stored(at path: String) throws -> (entries: [(cursor: Int64, at: Double)], head: Int64?, tips: Int64?) {
    let connection = try SQLiteConnection(path: path)
    defer { connection.close() }
    var entries: [(cursor: Int64, at: Double)] = []
    let chunks = try connection.prepareUncached("SELECT id, entries FROM history ORDER BY id")
    while try chunks.step() {
      let events = try #require(HistoryCodec.decode(chunks.blobBytes(1), first: chunks.int64(0)))
      entries += events.map { ($0.cursor, $0.at) }
    }
    return (
      entries, try connection.scalarInt("SELECT cursor FROM history_head"),
      try connection.scalarInt("SELECT count(*) FROM history_tips")
    )
  }

  /// Serves `path` from `start`, runs `body`, and stops.
  ///
  /// Opening the file just after the previous server closed it can find its lock still held: a process another test
  /// spawns at that moment holds a copy of the closed lock's descriptor until it executes its program. Opening is
  /// tried again until the lock is free, a bounded number of times.
  static func serve(
    _ path: String, start: Double, days: Double, _ body: (EmbeddedClient) throws -> Void
  ) throws {
    var attempts = 0
    let fixture: TestServer
    while true {
      do {
        fixture = try Self.fixture(start: start) {
          $0.datastorePath = path
          $0.historyDays = days
        }
        break
      } catch let error as ServerError where error.message.contains("another tipsd is using") && attempts < 2_000 {
        attempts += 1
        usleep(1_000)
      }
    }
    try body(try fixture.connect())
    fixture.server.finish()
    fixture.server.closeDatastore()
  }

  @Test func aShorterRetentionOrNoneLeavesNothingStoredPastItAfterTheFirstPrune() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/store.sqlite"
    // 90 days: cursor 1 (registered) and 2 (displayed) at the start, 3 two days later, 4 and 5 (the goal) four days
    // later, then 6 with the clock set back to the first day: the newest entry, and not the youngest.
    try Self.serve(path, start: Self.start, days: 90) { client in
      try client.result("tips/register", ["tips": [MeasuringTests.filterTip]])
      try client.result("tips/displayed", ["id": "filter.tip"])
      try client.result("clock/advance", ["seconds": .double(2 * Self.day)])
      try client.result("tips/displayed", ["id": "filter.tip"])
      try client.result("clock/advance", ["seconds": .double(2 * Self.day)])
      try client.result("tips/displayed", ["id": "filter.tip"])
      try client.result("events/donate", ["id": "filter.used"])
      try client.result("clock/set", ["now": .double(Self.start + Self.day)])
      try client.result("tips/displayed", ["id": "filter.tip"])
    }
    #expect(try Self.stored(at: path).entries.map(\.cursor) == [1, 2, 3, 4, 5, 6])

    // Restarted later with 3 days: everything older than that is gone at the start, wherever it lies.
    let later = Self.start + 4 * Self.day + 3_600
    try Self.serve(path, start: later, days: 3) { client in
      let page = try client.result("analytics/read")
      #expect(page["events"]?.arrayValue?.map { $0["cursor"] } == [3, 4])
      #expect(page["oldest"] == 3 && page["head"] == 6)
    }
    let shorter = try Self.stored(at: path)
    #expect(shorter.entries.map(\.cursor) == [3, 4, 5])
    #expect(shorter.entries.allSatisfy { $0.at >= later - 3 * Self.day })
    #expect(shorter.head == 6 && shorter.tips == 1, "the newest cursor, and the tip's last recorded eligibility")

    // Restarted with 0 days: nothing stored, nothing recorded; cursors are not reused.
    var metricsFromNothing: JSONValue?
    try Self.serve(path, start: later + 60, days: 0) { client in
      try client.result("tips/register", ["tips": [MeasuringTests.filterTip]])
      try client.result("tips/displayed", ["id": "filter.tip"])
      let page = try client.result("analytics/read")
      #expect(page["events"] == [] && page["oldest"] == .null && page["head"] == 6)
      metricsFromNothing = try client.result("metrics/get")
    }
    let none = try Self.stored(at: path)
    #expect(none.entries.isEmpty && none.tips == 0 && none.head == 6)
    // The metrics answer from nothing: as those of a daemon that never recorded anything.
    let fresh = try Self.fixture(start: later + 60) { $0.historyDays = 0 }
    let client = try fresh.connect()
    try client.result("tips/register", ["tips": [MeasuringTests.filterTip]])
    try client.result("tips/displayed", ["id": "filter.tip"])
    #expect(metricsFromNothing == (try client.result("metrics/get")))
    #expect(metricsFromNothing?["tips"]?[0]?["overall"]?["impressions"] == 0)

    // History on again: it continues after the newest cursor ever given.
    try Self.serve(path, start: later + 120, days: 90) { client in
      try client.result("tips/register", ["tips": [MeasuringTests.filterTip]])
      #expect(try MeasuringTests.read(client).map { $0["cursor"] } == [7])
    }
  }

  /// A daemon that keeps running prunes as it goes: every hour of its clock (the housekeeping timer checks each
  /// second), not only at start. The system clock here is the embedded loop's manual time; two hours of retention
  /// keep the loop's ticks few.
  @Test func aLongRunningDaemonPrunesEveryHour() throws {
    let fixture = try TestServer { $0.historyDays = 2.0 / 24 }
    let client = try fixture.connect()
    let first = fixture.clock.now()
    try client.result("tips/register", ["tips": [MeasuringTests.filterTip]])
    try client.result("tips/displayed", ["id": "filter.tip"])
    fixture.loop.advance(seconds: 5_400)
    try client.result("tips/displayed", ["id": "filter.tip"])
    #expect(try MeasuringTests.read(client).map { $0["cursor"] } == [1, 2, 3])
    // The prune two hours after the start keeps the first entries (not older than the limit yet); the next one,
    // an hour later, deletes them.
    fixture.loop.advance(seconds: 7_200 - 5_400 + 1)
    #expect(try MeasuringTests.read(client).map { $0["cursor"] } == [1, 2, 3])
    fixture.loop.advance(seconds: 3_600)
    let store = fixture.server.store
    let kept = try store.history(after: 0, limit: 100) + store.historyForMetrics()
    #expect(Set(kept.map(\.cursor)) == [3])
    #expect(kept.allSatisfy { $0.at >= first + 3_600 })
    #expect(fixture.logged("pruned the lifecycle history"))
  }
}
