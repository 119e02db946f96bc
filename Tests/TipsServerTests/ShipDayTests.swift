import Foundation
import Testing
import TipsJSON
import TipsProtocol
import TipsTestSupport

/// Issue #12: lifetime counts and variants survive restarts (the real daemon and its datastore file), testing
/// methods are refused without --allow-testing (in process).
@Suite struct ShipDayTests {
  static let loyal: JSONValue = [
    "id": "loyal.tip", "title": "Thanks for sticking around",
    "rules": [["event": "app.opened", "count": ["gte": 1001]]],
  ]
  static let variantTip: JSONValue = [
    "id": "filter.tip", "title": "T", "rules": [["event": "search.opened", "count": ["gte": 1]]],
    "variants": ["friendly": ["title": "F"], "direct": ["title": "D"]],
  ]

  @Test func fifteenHundredDonationsMakeGte1001HoldAndSurviveARestart() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let datastore = "\(directory)/state.sqlite"
    do {
      let daemon = try Daemon([], directory: directory, datastore: datastore)
      let client = try daemon.connect()
      try client.initialize()
      try client.result("tips/register", ["tips": [Self.loyal]])
      var last = JSONValue.null
      for _ in 0..<1500 { last = try client.result("events/donate", ["id": "app.opened"]) }
      #expect(last["count"] == 1000)
      #expect(last["lifetime"] == 1500)
      #expect(try client.result("tips/status", ["ids": ["loyal.tip"]])["tips"]?[0]?["shouldDisplay"] == true)
      daemon.signal(SIGKILL)
      _ = try daemon.wait()
      daemon.stop(removeDirectory: false)
    }
    let daemon = try Daemon([], directory: directory, datastore: datastore)
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    try client.result("tips/register", ["tips": [Self.loyal]])
    #expect(try client.result("tips/status", ["ids": ["loyal.tip"]])["tips"]?[0]?["shouldDisplay"] == true)
    let explained = try client.result("tips/explain", ["id": "loyal.tip"])
    #expect(explained["rules"]?[0]?["reads"] == "lifetime")
    #expect(explained["rules"]?[0]?["detail"] == "app.opened count=1500 (lifetime), needs >= 1001")
    let next = try client.result("events/donate", ["id": "app.opened"])
    #expect(next["count"] == 1000)
    #expect(next["lifetime"] == 1501)
  }

  @Test func aVariantIsStickyAcrossRestartsAndTheSameOnEveryMachine() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let datastore = "\(directory)/state.sqlite"
    // install-1 → "direct" (index 1 of FNV-1a/SplitMix64, see VariantTests), on any machine.
    do {
      let daemon = try Daemon([], directory: directory, datastore: datastore)
      let client = try daemon.connect()
      try client.initialize(installID: "install-1")
      let registered = try client.result("tips/register", ["tips": [Self.variantTip]])
      #expect(registered["tips"]?[0]?["variant"] == "direct")
      #expect(registered["tips"]?[0]?["tip"]?["title"] == "D")
      daemon.stop(removeDirectory: false)
    }
    // The next launch does not send an install id: the stored one and the stored assignment hold.
    let daemon = try Daemon([], directory: directory, datastore: datastore)
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    let registered = try client.result("tips/register", ["tips": [Self.variantTip]])
    #expect(registered["tips"]?[0]?["variant"] == "direct")
    // A daemon elsewhere with --install-id install-1 picks the same.
    let other = try Daemon(["--install-id", "install-1"])
    defer { other.stop() }
    let otherClient = try other.connect()
    try otherClient.initialize(installID: "ignored-when-the-flag-is-set")
    #expect(try otherClient.result("tips/register", ["tips": [Self.variantTip]])["tips"]?[0]?["variant"] == "direct")
  }

  /// In process: no process is needed to see a refusal.
  @Test func testingMethodsAreRefusedWithoutTheFlag() throws {
    let fixture = try TestServer { $0.clock = .virtual(start: 1_000) }
    let client = try fixture.connect()
    for method in [
      "datastore/reset", "testing/showAllTips", "testing/hideAllTips", "testing/clear", "clock/advance", "clock/set",
    ] {
      let params: JSONValue? =
        method == "clock/advance" ? ["seconds": 1] : method == "clock/set" ? ["now": 5] : nil
      let error = try client.refusal(method, params)
      #expect(error.code == .testingDisabled, "\(method)")
      #expect(error.message.contains("--allow-testing"))
    }
    #expect(try client.refusal("testing/showTips", ["ids": ["a"]]).code == .testingDisabled)
    #expect(try client.send(ClockNowRequest()).virtual)
  }
}
