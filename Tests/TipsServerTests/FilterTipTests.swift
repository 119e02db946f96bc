import Foundation
import TipsFraming
import TipsJSON
import TipsTestSupport
import Testing

/// The seed 000 FilterTip end to end, against the real binary, over every transport and framing.
@Suite struct FilterTipTests {
  enum Transport: String, CaseIterable, Sendable { case stdio, socket }

  static let combinations: [(Transport, Framing)] = [
    (.stdio, .newline), (.stdio, .contentLength), (.socket, .newline), (.socket, .contentLength),
  ]

  @Test(arguments: combinations)
  func filterTipEndToEnd(transport: Transport, framing: Framing) throws {
    let daemon = try Daemon(["--clock", "virtual", "--clock-start", "1000000"], socket: transport == .socket)
    defer { daemon.stop() }
    let client = transport == .socket ? try daemon.connect(framing: framing) : daemon.stdioClient(framing: framing)

    let hello = try client.initialize()
    #expect(hello["protocolVersion"] == "1.2")
    #expect(hello["serverInfo"]?["name"] == "tipsd")

    let registered = try client.result("tips/register", ["tips": [filterTip]])
    #expect(registered["tips"]?[0]?["status"] == "pending")

    let observed = try client.result("tips/observe", ["ids": ["filter.tip"]])
    let subscription = try #require(observed["subscription"])
    #expect(observed["tips"]?[0]?["shouldDisplay"] == false)

    #expect(try client.result("events/donate", ["id": "search.opened"])["count"] == 1)
    #expect(try client.result("events/donate", ["id": "search.opened"])["count"] == 2)
    #expect(client.notifications.isEmpty)
    #expect(try client.result("events/donate", ["id": "search.opened"])["count"] == 3)

    let shown = try #require(try client.nextNotification("tips/shouldDisplayChanged"))
    #expect(shown["params"]?["subscription"] == subscription)
    #expect(shown["params"]?["seq"] == 1)
    #expect(shown["params"]?["id"] == "filter.tip")
    #expect(shown["params"]?["shouldDisplay"] == true)
    #expect(shown["params"]?["status"] == "available")
    #expect(shown["params"]?["tip"]?["title"] == "You can narrow this down")
    #expect(shown["params"]?["tip"]?["actions"] == [["id": "learn-more", "title": "Learn more", "index": 0]])

    try client.result("events/donate", ["id": "filter.used"])
    let hidden = try #require(try client.nextNotification("tips/shouldDisplayChanged"))
    #expect(hidden["params"]?["seq"] == 2)
    #expect(hidden["params"]?["shouldDisplay"] == false)
    #expect(hidden["params"]?["status"] == "pending")

    try client.result("shutdown")
    try client.notify("exit")
    if transport == .stdio {
      #expect(try daemon.wait() == 0)
    }
  }

  @Test func actionDispatchDeliversAnArrayToEverySubscriber() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let app = try daemon.connect()
    let listener = try daemon.connect(framing: .contentLength)
    try app.initialize(name: "app")
    try listener.initialize(name: "listener")
    try app.result("tips/register", ["tips": [filterTip]])
    let all = try listener.result("actions/subscribe", [:])["subscription"]
    let onlyOther = try listener.result("actions/subscribe", ["tipIds": ["other.tip"]])["subscription"]
    #expect(all != onlyOther)

    let state = try app.result("tips/performAction", ["id": "filter.tip", "actionId": "learn-more"])
    #expect(state["status"] == "invalidated")
    #expect(state["reason"] == "actionPerformed")

    let note = try #require(try listener.nextNotification("tips/actionPerformed"))
    #expect(note["params"]?["subscription"] == all)
    #expect(note["params"]?["seq"] == 1)
    #expect(note["params"]?["tipId"] == "filter.tip")
    #expect(note["params"]?["actions"] == [["id": "learn-more", "title": "Learn more", "index": 0]])
    // The subscription filtered to another tip hears nothing: nothing more arrived before a later reply.
    #expect(try listener.notificationsBeforeBarrier("tips/actionPerformed") == [])

    let unknown = try app.call("tips/performAction", ["id": "filter.tip", "actionId": "nope"])
    #expect(unknown["error"]?["code"] == -32008)
    // invalidate: false records the action without invalidating.
    try app.result("tips/resetEligibility", ["id": "filter.tip"])
    let kept = try app.result("tips/performAction", ["id": "filter.tip", "actionId": "learn-more", "invalidate": false])
    #expect(kept["status"] != "invalidated")
    #expect(try listener.nextNotification("tips/actionPerformed")?["params"]?["seq"] == 2)
  }

  @Test func aDonationFromOneClientNotifiesAnother() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let a = try daemon.connect()
    let b = try daemon.connect()
    try a.initialize()
    try b.initialize()
    try a.result("tips/register", ["tips": [["id": "welcome", "title": "Hi", "rules": [["event": "opened", "count": ["gte": 1]]]]]])
    try b.result("tips/observe", [:])
    try a.result("events/donate", ["id": "opened"])
    let note = try #require(try b.nextNotification("tips/shouldDisplayChanged"))
    #expect(note["params"]?["id"] == "welcome")
    #expect(note["params"]?["shouldDisplay"] == true)
  }
}
