import Foundation
import Testing
import TipsEngine
import TipsFraming
import TipsJSON
import TipsTestSupport

@testable import TipsServer

/// The lifecycle history, the analytics stream, the metrics and the inspector's view (issue #13), in process on the
/// embedded loop with a virtual clock.
@Suite struct MeasuringTests {
  static let start = 1_000_000.0

  /// seed 000's filter tip with a goal and two copy variants.
  static let filterTip: JSONValue = [
    "id": "filter.tip", "title": "You can narrow this down",
    "actions": [["id": "learn-more", "title": "Learn more"], ["id": "later", "title": "Later", "invalidate": false]],
    "rules": [["event": "search.opened", "count": ["gte": 3]]],
    "goal": ["event": "filter.used", "within": ["hours": 24]],
  ]

  static func fixture(_ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) throws -> TestServer {
    try TestServer {
      $0.clock = .virtual(start: Self.start)
      $0.allowTesting = true
      $0.appClosedEvent = "app.backgrounded"
      configure(&$0)
    }
  }

  /// `analytics/read` from the start, as (type, tipId, extra) triples.
  static func read(_ client: EmbeddedClient, after: Int = 0) throws -> [JSONValue] {
    try client.result("analytics/read", ["after": .int(Int64(after)), "limit": 1000])["events"]?.arrayValue ?? []
  }

  static func types(_ events: [JSONValue]) -> [String] { events.compactMap { $0["type"]?.stringValue } }

  @Test func theLifecycleIsRecordedInOrderWithItsDetails() throws {
    let fixture = try Self.fixture()
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    for _ in 0..<3 { try client.result("events/donate", ["id": "search.opened"]) }
    try client.result("clock/advance", ["seconds": 60])
    try client.result("tips/displayed", ["id": "filter.tip", "duration": 4.5])
    try client.result("tips/performAction", ["id": "filter.tip", "actionId": "later"])
    try client.result("tips/performAction", ["id": "filter.tip", "actionId": "learn-more"])
    let events = try Self.read(client)
    #expect(
      Self.types(events) == [
        "eligibility",  // registered: pending
        "eligibility",  // 3 searches: available
        "impression", "action", "action", "invalidation", "eligibility",
      ])
    #expect(events.map { $0["cursor"]?.intValue ?? 0 } == Array(1...7))
    #expect(events[0]["status"] == "pending" && events[0]["shouldDisplay"] == false)
    #expect(events[1]["status"] == "available" && events[1]["shouldDisplay"] == true)
    #expect(events[2]["at"] == .int(Int64(Self.start) + 60) && events[2]["duration"] == 4.5)
    #expect(events[3]["actionId"] == "later" && events[3]["actionIndex"] == 1)
    #expect(events[4]["actionId"] == "learn-more" && events[4]["actionIndex"] == 0)
    #expect(events[5]["reason"] == "actionPerformed")
    #expect(events[6]["status"] == "invalidated" && events[6]["reason"] == "actionPerformed")
    #expect(events.allSatisfy { $0["tipId"] == "filter.tip" && $0["variant"] == .null })
    let page = try client.result("analytics/read", ["after": 5, "limit": 1])
    #expect(page["events"]?.arrayValue?.count == 1 && page["next"] == 6 && page["head"] == 7 && page["oldest"] == 1)
  }

  @Test func variantAssignmentsAreRecordedOnceAndEventsCarryTheVariant() throws {
    let fixture = try Self.fixture { $0.installID = "install-1" }
    let client = try fixture.connect()
    var tip = Self.filterTip.objectValue!
    tip["variants"] = ["friendly": ["title": "Friendly"], "terse": ["title": "Terse"]]
    try client.result("tips/register", ["tips": [.object(tip)]])
    try client.result("tips/register", ["tips": [.object(tip)]])  // registered again: no new assignment
    let variant = try #require(try client.result("tips/status", ["ids": ["filter.tip"]])["tips"]?[0]?["variant"])
    try client.result("tips/displayed", ["id": "filter.tip"])
    let events = try Self.read(client)
    #expect(Self.types(events) == ["variant", "eligibility", "impression"])
    #expect(events.allSatisfy { $0["variant"] == variant })
    let other: JSONValue = variant == "friendly" ? "terse" : "friendly"
    try client.result("tips/setVariant", ["id": "filter.tip", "variant": other])
    #expect(Self.types(try Self.read(client, after: 3)) == ["variant"])
  }

  @Test func goalAndAppClosedDonationsAreKeptForTheMetricsButNotStreamed() throws {
    let fixture = try Self.fixture()
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    try client.result("events/donate", ["id": "filter.used"])
    try client.result("events/donate", ["id": "app.backgrounded"])
    try client.result("events/donate", ["id": "unrelated"])
    #expect(Self.types(try Self.read(client)) == ["eligibility"])
    let stored = try fixture.server.store.historyForMetrics()
    #expect(stored.filter { $0.kind == .donation }.map(\.eventID) == ["filter.used", "app.backgrounded"])
    // The metrics also read the eligibility change (a variant's trigger is the tip becoming displayable, #46).
    #expect(stored.map(\.kind) == [.eligibility, .donation, .donation])
    // A request that only records history (an action that does not invalidate) is durable: its reply waits for the
    // commit like a donation's.
    #expect(fixture.server.local!.history.lastCursor == 3)
  }

  @Test func theMetricsOfAHandWorkedDayUnderTheVirtualClock() throws {
    let fixture = try Self.fixture { $0.closeRateAlert = 0.25 }
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    try client.result("events/donate", ["id": "filter.used"])  // before any impression: not a conversion
    try client.result("clock/advance", ["seconds": 3_600])
    try client.result("tips/displayed", ["id": "filter.tip"])  // i1 at 1 h
    try client.result("clock/advance", ["seconds": 5])
    try client.result("events/donate", ["id": "app.backgrounded"])  // 5 s after i1: a close
    try client.result("clock/advance", ["seconds": 3_600])
    try client.result("tips/displayed", ["id": "filter.tip"])  // i2 at 2 h + 5 s
    try client.result("clock/advance", ["seconds": 2])
    try client.result("tips/performAction", ["id": "filter.tip", "actionId": "later"])
    try client.result("events/donate", ["id": "app.backgrounded"])  // after an action: not a close
    try client.result("clock/advance", ["seconds": 1_800])
    try client.result("events/donate", ["id": "filter.used"])  // 30 min after i2: converts i2 only
    try client.result("clock/advance", ["seconds": 172_800])
    let report = try client.result("metrics/get", ["tips": ["filter.tip"]])
    let overall = try #require(report["tips"]?[0]?["overall"])
    #expect(overall["impressions"] == 2)
    // One install is one account: its raw counts, and no interval until 100 accounts (issue #38).
    #expect(
      overall["goal"] == [
        "converted": 1, "decided": 2, "pending": 0, "rate": 0.5, "low": .null, "high": .null,
        "interval": "fixedHorizon", "accounts": 1, "notEnoughData": true,
      ])
    // One exposure (i1 … the goal): 1 h + 2 s + 30 min.
    #expect(overall["timeToGoal"] == ["samples": 1, "median": 5_407, "open": 0])
    #expect(
      overall["close"]
        == [
          "available": true, "closes": 1, "decided": 2, "pending": 0, "rate": 0.5, "alert": true, "low": .null,
          "high": .null, "interval": "fixedHorizon", "accounts": 1, "notEnoughData": true,
        ])
    #expect(report["method"]?["unit"] == "account" && report["method"]?["cuped"] == .null)
    let cuped = try client.result("metrics/get", ["tips": ["filter.tip"], "cuped": true])
    #expect(cuped["method"]?["cuped"]?["days"] == 7)
    #expect(report["appClosedEvent"] == "app.backgrounded" && report["closeRateAlert"] == 0.25)
    let since = try client.result("metrics/get", ["since": .double(Self.start + 7_000)])
    #expect(since["tips"]?[0]?["overall"]?["impressions"] == 1)
    let unknown = try client.call("metrics/get", ["tips": ["nope"]])
    #expect(unknown["error"]?["code"] == -32001)
  }

  @Test func aReplayFromACursorThenLiveEventsArriveInOrderWithoutGapsOrRepeats() throws {
    // A small high-water mark and a slow reader: the replay is paced, never disconnected.
    let fixture = try Self.fixture { $0.outgoingHighWater = 4 << 10 }
    let producer = try fixture.connect()
    try producer.result("tips/register", ["tips": [Self.filterTip]])
    for i in 0..<400 { try producer.result("tips/displayed", ["id": "filter.tip", "duration": .int(Int64(i))]) }
    let forwarder = try fixture.connect()
    forwarder.stream.window = 2_048
    let subscribed = try forwarder.result("analytics/subscribe", ["after": 100])
    #expect(subscribed["head"] == 401 && subscribed["oldest"] == 1)
    for i in 400..<450 { try producer.result("tips/displayed", ["id": "filter.tip", "duration": .int(Int64(i))]) }
    var cursors: [Int64] = []
    var turns = 0
    while cursors.last != 451 && turns < 10_000 {
      forwarder.stream.window = 2_048
      try forwarder.flush()
      cursors += forwarder.takeNotifications("analytics/event").compactMap { $0["params"]?["cursor"]?.intValue }
      turns += 1
    }
    #expect(cursors == Array(101...451))
    #expect(!forwarder.stream.isClosed)
    // Live only: only what happens next.
    let live = try fixture.connect()
    try live.result("analytics/subscribe")
    try producer.result("tips/displayed", ["id": "filter.tip"])
    try live.flush()
    #expect(live.takeNotifications("analytics/event").compactMap { $0["params"]?["cursor"]?.intValue } == [452])
  }

  @Test func aFailedCommitStreamsNothingOfWhatItLost() throws {
    let fixture = try Self.fixture { $0.datastoreMaxPages = 60 }
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    try client.result("analytics/subscribe")
    // One turn: an impression and a write too large for the capped file. Both fail together.
    let big = JSONValue.string(String(repeating: "x", count: 400_000))
    try client.result("parameters/define", ["parameters": [["id": "big", "default": ""]]])
    let first = client.sendRequest("tips/displayed", ["id": "filter.tip"])
    let second = client.sendRequest("parameters/set", ["id": "big", "value": big])
    try client.flush()
    #expect(try client.takeReply(id: first)["error"]?["code"] == -32005)
    #expect(try client.takeReply(id: second)["error"]?["code"] == -32005)
    #expect(client.takeNotifications("analytics/event").isEmpty)
    try client.result("tips/displayed", ["id": "filter.tip"])
    let delivered = client.takeNotifications("analytics/event").compactMap { $0["params"]?["cursor"]?.intValue }
    #expect(delivered.count == 1)
    #expect(try Self.read(client).compactMap { $0["cursor"]?.intValue }.contains(delivered[0]))
  }

  @Test func theInspectorsStateAndOneChangedNotificationPerArming() throws {
    let fixture = try Self.fixture()
    let inspector = try fixture.connect()
    let app = try fixture.connect()
    try app.result("parameters/define", ["parameters": [["id": "isLoggedIn", "default": false]]])
    try app.result("tips/register", ["tips": [Self.filterTip]])
    try app.result("groups/register", ["id": "g", "priority": "ordered", "tips": ["filter.tip"]])
    try app.result("events/donate", ["id": "search.opened", "info": ["q": "x"]])
    let state = try inspector.result("inspect/state", ["watch": true])
    let subscription = try #require(state["subscription"]?.stringValue)
    #expect(state["virtualClock"] == true && state["testing"] == true && state["now"] == .int(Int64(Self.start)))
    let tip = try #require(state["tips"]?[0])
    #expect(tip["id"] == "filter.tip" && tip["status"] == "pending" && tip["goal"]?["event"] == "filter.used")
    #expect((tip["lines"]?.arrayValue?.count ?? 0) >= 2)
    #expect(tip["rules"]?[0]?["holds"] == false)
    let search = state["events"]?.arrayValue?.first { $0["id"] == "search.opened" }
    #expect(search?["count"] == 1 && search?["lastDonation"]?["info"] == ["q": "x"])
    let used = state["events"]?.arrayValue?.first { $0["id"] == "filter.used" }
    #expect(used?["goalOf"] == ["filter.tip"] && used?["lastDonation"] == .null)
    #expect(state["parameters"]?[0] == ["id": "isLoggedIn", "value": false, "default": false, "transient": false])
    #expect(
      state["groups"]?[0] == [
        "id": "g", "priority": "ordered", "tips": ["filter.tip"], "currentTip": .null, "schedule": .null,
      ])
    #expect(state["suppression"]?["suppressed"] == false)
    #expect(state["history"]?["head"] == 1 && state["history"]?["appClosedEvent"] == "app.backgrounded")
    try app.result("events/donate", ["id": "search.opened"])
    try app.result("events/donate", ["id": "search.opened"])
    try inspector.flush()
    let changed = inspector.takeNotifications("inspect/changed")
    #expect(changed.count == 1, "one notification until armed again")
    #expect(changed.first?["params"] == ["subscription": .string(subscription), "seq": 1])
    try inspector.result("inspect/state", ["watch": true])
    try app.result("testing/hideAllTips")  // a change without a write
    try inspector.flush()
    #expect(inspector.takeNotifications("inspect/changed").count == 1)
  }

  @Test func historyOlderThanTheRetentionIsPrunedAndCursorsContinue() throws {
    let fixture = try Self.fixture { $0.historyDays = 1 }
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    try client.result("tips/displayed", ["id": "filter.tip"])
    try client.result("clock/advance", ["seconds": 259_200])
    fixture.loop.advance(seconds: 1.5)  // the housekeeping tick
    let page = try client.result("analytics/read")
    #expect(page["events"] == [], "the newest entry is past the retention too")
    #expect(page["oldest"] == .null && page["head"] == 2)
    try client.result("tips/displayed", ["id": "filter.tip"])
    #expect(try Self.read(client).map { $0["cursor"] } == [3])
  }

  @Test func noHistoryIsRecordedWithHistoryDaysZero() throws {
    let fixture = try Self.fixture { $0.historyDays = 0 }
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    try client.result("tips/displayed", ["id": "filter.tip"])
    #expect(try Self.read(client).isEmpty)
    #expect(try client.result("inspect/state")["history"]?["enabled"] == false)
  }

  @Test func aRestartThatFindsTipsAsTheyWereRecordsNothingNew() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/store.sqlite"
    do {
      let fixture = try Self.fixture { $0.datastorePath = path }
      let client = try fixture.connect()
      try client.result("tips/register", ["tips": [Self.filterTip]])
      try client.result("tips/displayed", ["id": "filter.tip"])
      fixture.server.finish()
      fixture.server.closeDatastore()
    }
    let fixture = try Self.fixture { $0.datastorePath = path }
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    for _ in 0..<3 { try client.result("events/donate", ["id": "search.opened"]) }
    let events = try Self.read(client)
    #expect(Self.types(events) == ["eligibility", "impression", "eligibility"])
    #expect(events.map { $0["cursor"] } == [1, 2, 3])
    #expect(events[2]["status"] == "available")
  }

  @Test func prometheusCountersFollowTheTraffic() throws {
    let fixture = try Self.fixture()
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.filterTip]])
    for _ in 0..<5 { try client.result("events/donate", ["id": "search.opened"]) }
    _ = try client.call("tips/status", ["ids": ["nope"]])
    _ = try client.call("no/such/method")
    let text = fixture.server.prometheusText()
    #expect(text.contains("tipsd_requests_total{method=\"events/donate\",outcome=\"ok\"} 5\n"))
    #expect(text.contains("tipsd_requests_total{method=\"tips/status\",outcome=\"error\"} 1\n"))
    #expect(text.contains("tipsd_requests_total{method=\"unknown\",outcome=\"error\"} 1\n"))
    #expect(text.contains("tipsd_connections{transport=\"unix\"} 1\n"))
    #expect(text.contains("# TYPE tipsd_commit_duration_seconds histogram\n"))
    #expect(text.contains("tipsd_history_events_total{type=\"eligibility\"} 2\n"))
  }
}
