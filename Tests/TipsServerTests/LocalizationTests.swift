import Foundation
import TipsJSON
import TipsTestSupport
import Testing

/// Copy chosen per client locale; strict params; subscription ids.
@Suite struct LocalizationTests {
  static let localizedTip: JSONValue = [
    "id": "filter.tip", "title": "You can narrow this down",
    "actions": [["id": "learn-more", "title": "Learn more"]],
    "rules": [["event": "search.opened", "count": ["gte": 1]]],
    "localizations": [
      "ja": ["title": "もっと絞り込めます", "actions": ["learn-more": "詳しく見る"]],
      "zh-Hans": ["title": "可以进一步筛选"],
    ],
  ]

  @Test func eachClientGetsCopyInItsLocale() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let japanese = try daemon.connect()
    let chinese = try daemon.connect()
    let french = try daemon.connect()
    try japanese.result("initialize", ["protocolVersion": "1.0", "clientInfo": ["name": "ja"], "locale": "ja_JP"])
    try chinese.result("initialize", ["protocolVersion": "1.0", "clientInfo": ["name": "zh"], "locale": "zh-Hans-CN"])
    try french.result("initialize", ["protocolVersion": "1.0", "clientInfo": ["name": "fr"], "locale": "fr"])
    let registered = try japanese.result("tips/register", ["tips": [Self.localizedTip]])
    #expect(registered["tips"]?[0]?["tip"]?["title"] == "もっと絞り込めます")
    #expect(registered["tips"]?[0]?["tip"]?["locale"] == "ja")
    #expect(registered["tips"]?[0]?["tip"]?["actions"]?[0]?["title"] == "詳しく見る")

    for client in [japanese, chinese, french] { try client.result("tips/observe", ["ids": ["filter.tip"]]) }
    try japanese.result("events/donate", ["id": "search.opened"])
    #expect(try japanese.nextNotification("tips/shouldDisplayChanged")?["params"]?["tip"]?["title"] == "もっと絞り込めます")
    let zh = try #require(try chinese.nextNotification("tips/shouldDisplayChanged"))
    #expect(zh["params"]?["tip"]?["title"] == "可以进一步筛选")
    // A missing action title falls back to the tip's own.
    #expect(zh["params"]?["tip"]?["actions"]?[0]?["title"] == "Learn more")
    // No matching locale: the tip's own copy, and `locale: null` says so.
    let fr = try #require(try french.nextNotification("tips/shouldDisplayChanged"))
    #expect(fr["params"]?["tip"]?["title"] == "You can narrow this down")
    #expect(fr["params"]?["tip"]?["locale"] == .null)

    try french.result("actions/subscribe", [:])
    try japanese.result("actions/subscribe", [:])
    try chinese.result("tips/performAction", ["id": "filter.tip", "actionId": "learn-more"])
    #expect(try japanese.nextNotification("tips/actionPerformed")?["params"]?["actions"]?[0]?["title"] == "詳しく見る")
    #expect(try french.nextNotification("tips/actionPerformed")?["params"]?["actions"]?[0]?["title"] == "Learn more")
  }

  @Test func localizationsNameOnlyTheTipsOwnActions() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    let reply = try client.call(
      "tips/register",
      ["tips": [["id": "t", "title": "T", "localizations": ["ja": ["actions": ["nope": "x"]]]]]])
    #expect(reply["error"]?["code"] == -32602)
    #expect(reply["error"]?["message"]?.stringValue?.contains("tips[0].localizations.ja.actions.nope") == true)
  }

  @Test func misspeltParamsAreRejected() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    let reply = try client.call("tips/status", ["id": "filter.tip"])
    #expect(reply["error"]?["code"] == -32602)
    #expect(reply["error"]?["message"]?.stringValue?.contains("unknown param \"id\" (expected ids)") == true)
  }

  @Test func observingGroupsOnlyListsNoTipsAndSubscriptionIdsAreChecked() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    try client.result("tips/register", ["tips": [["id": "a", "title": "A"], ["id": "b", "title": "B"]]])
    try client.result("groups/register", ["id": "g", "priority": "ordered", "tips": ["a", "b"]])
    let observed = try client.result("tips/observe", ["groups": ["g"]])
    #expect(observed["tips"] == [])
    #expect(observed["groups"] == [["group": "g", "tipId": "a"]])
    let id = try #require(observed["subscription"])
    #expect(try client.result("tips/unobserve", ["subscription": id])["removed"] == true)
    #expect(try client.result("tips/unobserve", ["subscription": id])["removed"] == false)  // idempotent
    let unknown = try client.call("tips/unobserve", ["subscription": "sub-999"])
    #expect(unknown["error"]?["code"] == -32003)
    #expect(try client.call("actions/unsubscribe", ["subscription": "nonsense"])["error"]?["code"] == -32003)
  }
}
