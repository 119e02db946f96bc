import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsTestSupport

@testable import TipsServer

/// Issue #25's time-driven changes through the server on the embedded loop (system-clock mode: the time driver's
/// timer, manual time): each wakes the server at its instant and notifies observers with no request.
@Suite struct BeyondTipKitTests {
  static let t0: Double = 1_700_000_000

  /// `t0 + seconds` as ISO 8601.
  static func at(_ seconds: Double) -> String { ISO8601.string(from: t0 + seconds) }

  /// Advances the loop and returns the `shouldDisplay` values notified meanwhile.
  static func advance(_ fixture: TestServer, _ client: EmbeddedClient, _ seconds: Double) throws -> [Bool] {
    fixture.loop.advance(seconds: seconds)
    try client.read()
    return client.takeShouldDisplay().map(\.value)
  }

  @Test func aScheduleOpensAndClosesAtItsInstants() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    let tip: JSONValue = [
      "id": "sale.tip", "title": "Sale", "schedule": ["from": .string(Self.at(100)), "until": .string(Self.at(200))],
    ]
    try client.result("tips/register", ["tips": [tip]])
    try client.result("tips/observe", ["ids": ["sale.tip"]])
    #expect(try Self.advance(fixture, client, 99.9).isEmpty)
    #expect(try Self.advance(fixture, client, 0.2) == [true])
    #expect(try Self.advance(fixture, client, 99.7).isEmpty)
    #expect(try Self.advance(fixture, client, 0.2) == [false])
    #expect(try client.result("tips/explain", ["id": "sale.tip"])["heldBy"]?[0]?["kind"] == "schedule")
  }

  @Test func aSuppressionEndsByItselfAndSurvivesARestart() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/store.sqlite"
    do {
      let fixture = try TestServer { $0.datastorePath = path }
      let client = try fixture.connect()
      try client.result("tips/register", ["tips": [["id": "a.tip", "title": "A"]]])
      try client.result("tips/observe", ["ids": ["a.tip"]])
      let result = try client.result("tips/suppress", ["seconds": 3_600, "reason": "checkout"])
      #expect(
        result == [
          "suppressed": true, "since": .int(Int64(Self.t0)), "until": .int(Int64(Self.t0) + 3_600),
          "reason": "checkout",
        ])
      try client.read()
      #expect(client.takeShouldDisplay().map(\.value) == [false])
      fixture.server.finish()
      fixture.server.closeDatastore()
    }
    let fixture = try TestServer { $0.datastorePath = path }
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [["id": "a.tip", "title": "A"]]])
    try client.result("tips/observe", ["ids": ["a.tip"]])
    #expect(client.takeShouldDisplay().isEmpty)
    let explained = try client.result("tips/explain", ["id": "a.tip"])
    #expect(explained["shouldDisplay"] == false && explained["heldBy"]?[0]?["reason"] == "checkout")
    #expect(try client.result("inspect/state")["suppression"]?["until"] == .int(Int64(Self.t0) + 3_600))
    #expect(try Self.advance(fixture, client, 3_599.9).isEmpty)
    #expect(try Self.advance(fixture, client, 0.2) == [true])
    #expect(try client.call("tips/suppress", ["seconds": 0])["error"]?["code"] == -32602)
  }

  @Test func aFollowOnRulesForElapsesAtItsInstant() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    try client.result(
      "tips/register",
      [
        "tips": [
          ["id": "welcome.tip", "title": "Welcome"],
          [
            "id": "filter.tip", "title": "Filter",
            "rules": [["tip": "welcome.tip", "status": "invalidated", "for": ["hours": 1]]],
          ],
        ]
      ])
    try client.result("tips/observe", ["ids": ["filter.tip"]])
    try client.result("tips/invalidate", ["id": "welcome.tip"])
    #expect(try Self.advance(fixture, client, 3_599.9).isEmpty)
    #expect(try Self.advance(fixture, client, 0.2) == [true])
  }

  @Test func aDonationAgesOutAtItsInstant() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    let configured = try client.result("events/configure", ["id": "e", "maxAge": ["minutes": 10]])
    #expect(configured == ["id": "e", "maxDonations": .null, "maxAge": ["minutes": 10]])
    try client.result(
      "tips/register", ["tips": [["id": "recent.tip", "title": "R", "rules": [["event": "e", "count": ["gte": 1]]]]]])
    try client.result("tips/observe", ["ids": ["recent.tip"]])
    #expect(try client.result("events/donate", ["id": "e"]) == ["count": 1, "lifetime": 1])
    try client.read()
    #expect(client.takeShouldDisplay().map(\.value) == [true])
    #expect(try Self.advance(fixture, client, 599.9).isEmpty)
    #expect(try Self.advance(fixture, client, 0.2) == [false])
    #expect(try client.result("events/donate", ["id": "e"]) == ["count": 1, "lifetime": 2])
    let refused = try client.call("events/configure", ["id": "e"])
    #expect(refused["error"]?["code"] == -32602)
  }

  @Test func aHoldoutNeverDisplaysAndItsExposureIsRecordedOnce() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/store.sqlite"
    let tip: JSONValue = [
      "id": "filter.tip", "title": "Filter", "rules": [["event": "search.opened", "count": ["gte": 1]]],
      "goal": ["event": "filter.used"],
      "variants": ["friendly": ["title": "Try a filter"], "control": ["holdout": true]],
    ]
    func exposures(_ client: EmbeddedClient) throws -> [JSONValue] {
      try client.result("analytics/read")["events"]?.arrayValue?.filter { $0["type"] == "exposure" } ?? []
    }
    do {
      let fixture = try TestServer { $0.datastorePath = path }
      let client = try fixture.connect()
      try client.result("tips/register", ["tips": [tip]])
      try client.result("tips/setVariant", ["id": "filter.tip", "variant": "control"])
      try client.result("tips/observe", ["ids": ["filter.tip"]])
      try client.result("events/donate", ["id": "search.opened"])
      try client.read()
      #expect(!client.takeShouldDisplay().map(\.value).contains(true))
      #expect(try exposures(client).map { $0["variant"] } == ["control"])
      fixture.server.finish()
      fixture.server.closeDatastore()
    }
    let fixture = try TestServer { $0.datastorePath = path }
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [tip]])
    try client.result("events/donate", ["id": "search.opened"])
    #expect(try exposures(client).count == 1, "the restart does not count the exposure again")
    let state = try client.result("tips/status", ["ids": ["filter.tip"]])["tips"]?[0]
    #expect(state?["shouldDisplay"] == false && state?["status"] == "available" && state?["variant"] == "control")
    try client.result("events/donate", ["id": "filter.used"])
    let metrics = try client.result("metrics/get")["tips"]?[0]
    #expect(metrics?["variants"]?[1]?["holdout"] == true)
    #expect(metrics?["variants"]?[1]?["impressions"] == 1)
    #expect(metrics?["variants"]?[1]?["goal"]?["converted"] == 1)
    // The holdout's account, triggered by its one counterfactual exposure, did the goal: converted.
    #expect(
      metrics?["lift"]?["holdout"] == ["triggered": 1, "converted": 1, "decided": 1, "pending": 0, "rate": 1])
  }
}
