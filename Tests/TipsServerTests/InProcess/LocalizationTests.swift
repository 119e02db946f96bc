import Testing
import TipsJSON
import TipsProtocol
import TipsTestSupport

/// Copy chosen per client locale; strict params; subscription ids — in process on the embedded loop.
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

  /// The tip of each `tips/shouldDisplayChanged` the client received, read through the protocol's types.
  func contents(_ client: EmbeddedClient) throws -> [TipContent] {
    try client.read()
    return try client.takeNotifications(ShouldDisplayChangedNotification.method).map { note in
      try TipContent(from: try ResultReader(note["params"]?["tip"] ?? .null, path: "params.tip"))
    }
  }

  /// The actions of each `tips/actionPerformed` the client received.
  func actions(_ client: EmbeddedClient) throws -> [[ActionInfo]] {
    try client.read()
    return try client.takeNotifications(ActionPerformedNotification.method).map { note in
      try ResultReader(note["params"] ?? .null, path: "params").decodeArray("actions", of: ActionInfo.self)
    }
  }

  @Test func eachClientGetsCopyInItsLocale() throws {
    let fixture = try TestServer()
    let japanese = try fixture.connect(locale: "ja_JP")
    let chinese = try fixture.connect(locale: "zh-Hans-CN")
    let french = try fixture.connect(locale: "fr")
    let registered = try japanese.result(RegisterTipsRequest.self, ["tips": [Self.localizedTip]]).tips[0].tip
    #expect(registered.title == "もっと絞り込めます" && registered.locale == "ja")
    #expect(registered.actions.map(\.title) == ["詳しく見る"])

    for client in [japanese, chinese, french] { try client.result(ObserveRequest.self, ["ids": ["filter.tip"]]) }
    try japanese.result(DonateRequest.self, ["id": "search.opened"])
    #expect(try contents(japanese).map(\.title) == ["もっと絞り込めます"])
    let zh = try #require(try contents(chinese).first)
    #expect(zh.title == "可以进一步筛选")
    // A missing action title falls back to the tip's own.
    #expect(zh.actions.map(\.title) == ["Learn more"])
    // No matching locale: the tip's own copy, and `locale: null` says so.
    let fr = try #require(try contents(french).first)
    #expect(fr.title == "You can narrow this down" && fr.locale == nil)

    try french.result(SubscribeActionsRequest.self, [:])
    try japanese.result(SubscribeActionsRequest.self, [:])
    try chinese.result(PerformActionRequest.self, ["id": "filter.tip", "actionId": "learn-more"])
    #expect(try actions(japanese).map { $0.map(\.title) } == [["詳しく見る"]])
    #expect(try actions(french).map { $0.map(\.title) } == [["Learn more"]])
  }

  @Test func localizationsNameOnlyTheTipsOwnActions() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    let error = try client.refusal(
      "tips/register", ["tips": [["id": "t", "title": "T", "localizations": ["ja": ["actions": ["nope": "x"]]]]]])
    #expect(error.code == .invalidParams)
    #expect(error.message.contains("tips[0].localizations.ja.actions.nope"))
  }

  @Test func misspeltParamsAreRejected() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    let error = try client.refusal("tips/status", ["id": "filter.tip"])
    #expect(error.code == .invalidParams)
    #expect(error.message.contains("unknown param \"id\" (expected ids)"))
  }

  @Test func observingGroupsOnlyListsNoTipsAndSubscriptionIdsAreChecked() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    try client.result(RegisterTipsRequest.self, ["tips": [["id": "a", "title": "A"], ["id": "b", "title": "B"]]])
    try client.result(RegisterGroupRequest.self, ["id": "g", "priority": "ordered", "tips": ["a", "b"]])
    let observed = try client.result(ObserveRequest.self, ["groups": ["g"]])
    #expect(observed.tips.isEmpty)
    #expect(observed.groups == [GroupCurrentTip(group: "g", tipID: "a")])
    let id = JSONValue.string(observed.subscription)
    #expect(try client.result(UnobserveRequest.self, ["subscription": id]).removed)
    #expect(try !client.result(UnobserveRequest.self, ["subscription": id]).removed)  // idempotent
    #expect(try client.refusal("tips/unobserve", ["subscription": "sub-999"]).code == .unknownSubscription)
    #expect(try client.refusal("actions/unsubscribe", ["subscription": "nonsense"]).code == .unknownSubscription)
  }
}
