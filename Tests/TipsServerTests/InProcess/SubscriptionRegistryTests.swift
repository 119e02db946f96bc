import Testing
import TipsEngine
import TipsJSON
import TipsProtocol
import TipsTestSupport

@testable import TipsServer

/// The subscription registry on its own: who watches what, and the notifications it builds.
@Suite struct SubscriptionRegistryTests {
  let loop = EmbeddedEventLoop()

  func session() -> Session {
    Session(
      stream: EmbeddedStream(loop: loop), maxMessageSize: 1 << 20, highWater: 1 << 20, queueLimit: 4 << 20,
      isPrimary: false, transport: "test")
  }

  func engine() throws -> Engine {
    let engine = Engine(clock: VirtualClock(now: 1_000))
    _ = try engine.register([
      try TipDefinition(
        json: [
          "id": "a", "title": "A", "actions": [["id": "go", "title": "Go"]],
          "rules": [["event": "e", "count": ["gte": 1]]],
        ],
        path: "t"),
      try TipDefinition(json: ["id": "b", "title": "B", "rules": [["event": "e", "count": ["gte": 1]]]], path: "t"),
    ])
    return engine
  }

  @Test func idsAreIssuedInOrderAndRecognized() {
    let registry = SubscriptionRegistry()
    let owner = session()
    #expect(!registry.isIssued("sub-1"))
    #expect(registry.observe(session: owner, tipIDs: nil, groups: [], initial: []) == "sub-1")
    #expect(registry.subscribeActions(session: owner, tipIDs: nil) == "sub-2")
    #expect(registry.isIssued("sub-1") && registry.isIssued("sub-2"))
    #expect(!registry.isIssued("sub-3") && !registry.isIssued("sub-0") && !registry.isIssued("nope"))
  }

  @Test func onlyTheOwnerUnsubscribes() {
    let registry = SubscriptionRegistry()
    let owner = session(), other = session()
    let id = registry.observe(session: owner, tipIDs: nil, groups: [], initial: [])
    #expect(!registry.unsubscribe(id, kind: .observe, session: other))
    #expect(!registry.unsubscribe(id, kind: .actions, session: owner), "the wrong kind")
    #expect(registry.unsubscribe(id, kind: .observe, session: owner))
    #expect(!registry.unsubscribe(id, kind: .observe, session: owner), "already gone")
    #expect(owner.subscriptions.isEmpty)
  }

  @Test func changesNotifyWatchersOnceEachAndNeverTheSameValueTwice() throws {
    let registry = SubscriptionRegistry()
    let all = session(), onlyB = session()
    let engine = try engine()
    _ = registry.observe(session: all, tipIDs: nil, groups: [], initial: engine.states())
    _ = registry.observe(session: onlyB, tipIDs: ["b"], groups: [], initial: engine.states(["b"]))
    let shown = [Change.tip(TipState(id: "a", status: .available, shouldDisplay: true))]
    let first = registry.notifications(for: shown, engine: engine)
    try #require(first.count == 1)
    #expect(first[0].0 === all)
    #expect(first[0].1.shouldDisplay?.tipID == "a" && first[0].1.shouldDisplay?.value == true)
    #expect(registry.notifications(for: shown, engine: engine).isEmpty, "already announced")
    let both = registry.notifications(
      for: [.tip(TipState(id: "b", status: .available, shouldDisplay: true))], engine: engine)
    #expect(Set(both.map { ObjectIdentifier($0.0) }) == [ObjectIdentifier(all), ObjectIdentifier(onlyB)])
  }

  @Test func groupObserversHearTheirGroupsOnly() throws {
    let registry = SubscriptionRegistry()
    let watcher = session()
    _ = registry.observe(session: watcher, tipIDs: [], groups: ["g"], initial: [])
    let notes = registry.notifications(
      for: [.groupCurrentTip(groupID: "g", tipID: "a"), .groupCurrentTip(groupID: "h", tipID: nil)],
      engine: try engine())
    #expect(notes.count == 1)
    let note = try #require(notes.first?.1.notification as? CurrentTipChangedNotification)
    #expect(note.group == "g" && note.tipID == "a")
  }

  @Test func actionsReachTheirSubscribersInTheirLocale() throws {
    let registry = SubscriptionRegistry()
    let japanese = session(), filtered = session(), other = session()
    japanese.locale = "ja"
    var definition = try TipDefinition(
      json: ["id": "a", "title": "A", "actions": [["id": "go", "title": "Go"]]], path: "t")
    definition.localizations = ["ja": TipLocalization(actionTitles: ["go": "行く"])]
    _ = registry.subscribeActions(session: japanese, tipIDs: nil)
    _ = registry.subscribeActions(session: filtered, tipIDs: ["a"])
    _ = registry.subscribeActions(session: other, tipIDs: ["b"])
    let notes = registry.actionNotifications(tip: definition, actionIndex: 0)
    #expect(notes.count == 2)
    let titles = notes.compactMap { ($0.1.notification as? ActionPerformedNotification)?.actions.first?.title }
    #expect(Set(titles) == ["行く", "Go"])
  }

  @Test func aClosedConnectionsSubscriptionsGo() {
    let registry = SubscriptionRegistry()
    let owner = session()
    _ = registry.observe(session: owner, tipIDs: nil, groups: [], initial: [])
    _ = registry.subscribeActions(session: owner, tipIDs: nil)
    #expect(registry.count == 2)
    registry.removeAll(of: owner)
    #expect(registry.count == 0)
  }
}
