import Foundation
import TipsEngine
import TipsJSON
@testable import TipsServer
import TipsTestSupport
import Testing

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
}
