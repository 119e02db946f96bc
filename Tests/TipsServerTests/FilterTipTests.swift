import Foundation
import Testing
import TipsFraming
import TipsJSON
import TipsProtocol
import TipsTestSupport

/// The seed 000 FilterTip end to end, against the real binary, over every transport and framing; action dispatch and
/// notifications across clients in process.
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
    #expect(hello.protocolVersion == ProtocolVersion.current)
    #expect(hello.serverName == "tipsd")

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

  /// In process: several clients on one server, no transport needed.
  @Test func actionDispatchDeliversAnArrayToEverySubscriber() throws {
    let fixture = try TestServer()
    let app = try fixture.connect()
    let listener = try fixture.connect(framing: .contentLength)
    try app.result(RegisterTipsRequest.self, ["tips": [filterTip]])
    let all = try listener.result(SubscribeActionsRequest.self, [:]).subscription
    let onlyOther = try listener.result(SubscribeActionsRequest.self, ["tipIds": ["other.tip"]]).subscription
    #expect(all != onlyOther)

    let state = try app.result(PerformActionRequest.self, ["id": "filter.tip", "actionId": "learn-more"])
    #expect(state.status.status == .invalidated(.actionPerformed))

    try listener.read()
    // Only the unfiltered subscription hears it: everything the action caused has arrived after the loop ran.
    let notes = listener.takeNotifications(ActionPerformedNotification.method)
    #expect(notes.count == 1)
    let note = try ResultReader(notes.first?["params"] ?? .null, path: "params")
    #expect(try note.string("subscription") == all && note.int64("seq") == 1 && note.string("tipId") == "filter.tip")
    #expect(
      try note.decodeArray("actions", of: ActionInfo.self) == [
        ActionInfo(id: "learn-more", title: "Learn more", index: 0)
      ])

    #expect(try app.refusal("tips/performAction", ["id": "filter.tip", "actionId": "nope"]).code == .unknownAction)
    // invalidate: false records the action without invalidating.
    try app.result(ResetEligibilityRequest.self, ["id": "filter.tip"])
    let kept = try app.result(
      PerformActionRequest.self, ["id": "filter.tip", "actionId": "learn-more", "invalidate": false])
    #expect(kept.status.name != "invalidated")
    try listener.read()
    let next = listener.takeNotifications(ActionPerformedNotification.method)
    #expect(try next.map { try ResultReader($0["params"] ?? .null).int64("seq") } == [2])
  }

  @Test func aDonationFromOneClientNotifiesAnother() throws {
    let fixture = try TestServer()
    let a = try fixture.connect()
    let b = try fixture.connect()
    try a.result(
      RegisterTipsRequest.self,
      ["tips": [["id": "welcome", "title": "Hi", "rules": [["event": "opened", "count": ["gte": 1]]]]]])
    try b.result(ObserveRequest.self, [:])
    try a.result(DonateRequest.self, ["id": "opened"])
    try b.read()
    let notes = b.takeNotifications(ShouldDisplayChangedNotification.method)
    let note = try ResultReader(notes.first?["params"] ?? .null, path: "params")
    #expect(notes.count == 1)
    #expect(try note.string("id") == "welcome" && note.bool("shouldDisplay"))
  }
}
