import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsMetrics
import TipsProtocol

/// Every `Response` reads back what the daemon writes: the document's examples, and round trips of values with
/// every optional member present and absent.
@Suite struct ResultDecodingTests {
  static let document: JSONValue = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let bytes = (try? Data(contentsOf: root.appendingPathComponent("protocol/openrpc.json"))) ?? Data()
    return (try? JSONParser.parse(Array(bytes))) ?? .null
  }()

  static func decode<R: RequestType>(_ type: R.Type, _ json: JSONValue) throws(ResultDecodingError) -> R.Response {
    try R.Response(json: json)
  }

  /// Each method's example results in protocol/openrpc.json decode with its `Response`, and encode back to the same
  /// members (`rpc.discover`'s example is the document itself, abridged).
  @Test(arguments: Messages.requests.map { $0.method })
  func theDocumentsExamplesDecode(method: String) throws {
    let type = try #require(Messages.requestsByMethod[method])
    let entry = try #require(Self.document["methods"]?.arrayValue?.first { $0["name"]?.stringValue == method })
    let examples = (entry["examples"]?.arrayValue ?? []).compactMap { $0["result"]?["value"] }
    #expect(!examples.isEmpty)
    for example in examples {
      let decoded = try Self.decode(type, example)
      // Written again, the members are the example's (numbers compared as numbers). The metrics' rates are computed
      // from what is decoded, not read (the document's example rounds them by hand).
      let derived: Set<String> = type == MetricsGetRequest.self ? ["days", "perDay", "change"] : []
      #expect(
        Self.without(derived, decoded.json) == Self.without(derived, example), "\(method): \(decoded.json.jsonString)")
    }
  }

  /// `value` with the members named `keys` removed at every depth.
  static func without(_ keys: Set<String>, _ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let object):
      var kept = JSONObject()
      for (key, member) in object where !keys.contains(key) { kept[key] = without(keys, member) }
      return .object(kept)
    case .array(let elements): return .array(elements.map { without(keys, $0) })
    default: return value
    }
  }

  static let content = TipContent(
    id: "filter.tip", title: "T", message: "M", image: "i", actions: [ActionInfo(id: "go", title: "Go", index: 0)],
    locale: "ja", presentation: TipPresentation(style: .popover, arrowEdge: .top), metadata: ["k": [1, 2]])

  @Test func roundTripsKeepEveryMember() throws {
    let full = TipStateInfo(
      id: "filter.tip", shouldDisplay: false, status: .invalidated(.displayCountExceeded), displayCount: 3,
      displayedDuration: 12.5, variant: "direct", tip: Self.content)
    let bare = TipStateInfo(
      id: "a", shouldDisplay: true, status: .available, displayCount: 0, displayedDuration: 0,
      tip: TipContent(id: "a", title: "A"))
    #expect(
      try TipStatesResult(json: TipStatesResult(tips: [full, bare]).json) == TipStatesResult(tips: [full, bare]))

    let observed = ObserveRequest.Response(
      subscription: "sub-1", tips: [bare], groups: [GroupCurrentTip(group: "g", tipID: nil)], unknown: ["x"])
    #expect(try ObserveRequest.Response(json: observed.json) == observed)

    let page = AnalyticsReadRequest.Response(
      events: [
        AnalyticsEventInfo(HistoryEvent(cursor: 4, kind: .action, at: 10, tipID: "t", actionID: "go", actionIndex: 0)),
        AnalyticsEventInfo(
          HistoryEvent(
            cursor: 5, kind: .eligibility, at: 11, tipID: "t", variant: "v", reason: "tipClosed",
            status: "invalidated", shouldDisplay: false)),
      ], next: 5, head: 9, oldest: nil)
    #expect(try AnalyticsReadRequest.Response(json: page.json) == page)

    let status = SyncStatusRequest.Response(
      enabled: true, state: "connected", server: "postgresql://u:***@db/t", account: "a", device: "d", outbox: 2,
      outboxLimit: 10, lagSeconds: 0.5, cursor: 7, lastPushAt: 100, lastPullAt: nil, lastError: "boom")
    #expect(try SyncStatusRequest.Response(json: status.json) == status)
    #expect(try SyncStatusRequest.Response(json: SyncStatusRequest.Response.disabled.json) == .disabled)
  }

  @Test func theInspectorsStateRoundTrips() throws {
    let tip = InspectState.Tip(
      state: TipStateInfo(
        id: "t", shouldDisplay: false, status: .pending, displayCount: 0, displayedDuration: 0, tip: Self.content),
      rules: [["rule": "x", "holds": false, "detail": "d"]],
      heldBy: [
        .cooldown(until: 1_000), .group("g", currentTip: nil), .override("hideAll"), .invalidated(reason: "tipClosed"),
      ],
      nextChangeAt: 1_000, override: "hideAll", lines: ["t: pending"], firstDisplayedAt: nil, lastDisplayedAt: 5,
      variants: ["a", "b"], goal: TipGoal(eventID: "filter.used", within: 3_600))
    let state = InspectState(
      now: 2_000, virtualClock: true, testing: true, displayFrequency: .daily, tips: [tip],
      events: [
        InspectState.Event(
          id: "e", count: 2, lifetime: 3, lastDonation: (at: 1_500, info: ["k": "v"]), maxDonations: 100,
          goalOf: ["t"], appClosed: false),
        InspectState.Event(
          id: "f", count: 0, lifetime: 0, lastDonation: nil, maxDonations: nil, goalOf: [], appClosed: true),
      ],
      parameters: [InspectState.Parameter(id: "p", value: true, defaultValue: false, transient: true)],
      groups: [InspectState.Group(id: "g", priority: "ordered", tips: ["t"], currentTip: "t")],
      overrides: InspectState.Overrides(showAll: false, hideAll: true, show: ["x"], hide: []),
      history: InspectState.History(enabled: true, days: 90, head: 12, oldest: 1, appClosedEvent: "app.closed"),
      subscription: "sub-3")
    let decoded = try InspectStateRequest.Response(json: InspectStateRequest.Response(state: state).json).state
    #expect(decoded == state)
    #expect(decoded.events[0].lastDonation?.info == ["k": "v"] && decoded.tips[0].heldBy == tip.heldBy)
  }

  @Test func theMetricsRoundTrip() throws {
    let set = MetricSet(
      impressions: 4, goal: GoalConversion(converted: 1, decided: 2, pending: 2, rate: 0.5),
      timeToGoal: TimeToGoal(samples: 1, median: 90, open: 1),
      close: CloseRate(closes: 1, decided: 4, pending: 0, rate: 0.25, alert: true),
      goalRate: GoalRateChange(
        firstImpressionAt: 100, before: RateWindow(from: 0, to: 172_800, count: 4),
        after: RateWindow(from: 100, to: 100 + 86_400, count: 6)))
    let report = MetricsReport(
      now: 200_000, since: 10, until: nil,
      configuration: MetricsConfiguration(appClosedEvent: "app.closed", closeWindow: 10, closeRateAlert: 0.2),
      historyStart: 0,
      tips: [
        TipMetrics(
          tipID: "t", goal: TipGoal(eventID: "g"), overall: set,
          variants: [("a", set), ("b", MetricSet(impressions: 0))])
      ])
    let decoded = try MetricsGetRequest.Response(json: MetricsGetRequest.Response(report: report).json).report
    #expect(decoded == report)
    #expect(decoded.tips[0].overall.goalRate?.change == 3)
  }

  @Test func aResultOfTheWrongShapeIsRefusedNamingThePath() {
    #expect(throws: ResultDecodingError("result.tips[0].id must be a string (got number)")) {
      try TipStatesResult(json: ["tips": [["id": 3]]])
    }
    #expect(throws: ResultDecodingError("result.tips[0] must be an object (got number)")) {
      try TipStatesResult(json: ["tips": [1]])
    }
    #expect(throws: ResultDecodingError("result has no member \"count\"")) { try DonateRequest.Response(json: [:]) }
    #expect(throws: ResultDecodingError("result.status is not pending, available or invalidated (got \"gone\")")) {
      try TipStateInfo(json: ["id": "a", "shouldDisplay": true, "status": "gone"])
    }
    #expect(throws: ResultDecodingError("result must be null (got object)")) { try NullResult(json: [:]) }
  }
}
