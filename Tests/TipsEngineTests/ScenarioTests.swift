import Testing
import TipsEngine
import TipsJSON

/// The scenarios of the seed documents (seed 000: FilterTip, the returning user, A/B variants; seed 002: TipGroup
/// and content ids).
@Suite("Seed scenarios")
struct ScenarioTests {
  static let filterRules = """
    [{"event": "search.opened", "count": {"gte": 3}},
     {"event": "filter.used", "count": {"eq": 0}},
     {"event": "search.opened", "within": {"days": 1}, "count": {"gte": 1}}]
    """

  static func filterTip(_ id: String = "filter.tip", title: String = "You can narrow this down") -> String {
    """
    {"id": "\(id)", "title": "\(title)",
     "message": "When you have too many results, the filter at the top can cut them quickly.",
     "image": "line.3.horizontal.decrease.circle",
     "actions": [{"id": "learn-more", "title": "Learn more"}],
     "rules": \(filterRules)}
    """
  }

  @Test("seed 000 FilterTip: the third search.opened shows it; a filter.used donation hides it")
  func filterTip() throws {
    let h = Harness()
    try h.register(Self.filterTip())
    #expect(h.donate("search.opened").isEmpty)
    h.clock.advance(by: 60)
    #expect(h.donate("search.opened").isEmpty)
    h.clock.advance(by: 60)
    #expect(h.donate("search.opened") == [.tip(TipState(id: "filter.tip", status: .available, shouldDisplay: true))])
    #expect(h.donate("filter.used") == [.tip(TipState(id: "filter.tip", status: .pending, shouldDisplay: false))])
  }

  @Test("seed 000 FilterTip: the learn-more action invalidates it for good")
  func filterTipAction() throws {
    let h = Harness()
    try h.register(Self.filterTip())
    h.donate("search.opened", times: 3)
    h.apply(try h.engine.invalidate("filter.tip", reason: .actionPerformed))
    #expect(h.donate("search.opened").isEmpty)
    #expect(h.status("filter.tip") == .invalidated(.actionPerformed))
  }

  @Test("seed 000 returning user: three searches six months ago do not ambush them; a new search does")
  func returningUser() throws {
    let sixMonths = 182.0 * 86_400
    // Live: the donations age while the app is running.
    let h = Harness()
    try h.register(Self.filterTip())
    h.donate("search.opened", times: 3)
    #expect(h.shows("filter.tip"))
    let next = try #require(h.engine.nextChangeTime())
    #expect(next == t0 + 86_400)
    h.clock.advance(by: sixMonths)
    #expect(
      h.apply(h.engine.advanceTime()) == [.tip(TipState(id: "filter.tip", status: .pending, shouldDisplay: false))])
    #expect(h.donate("search.opened") == [.tip(TipState(id: "filter.tip", status: .available, shouldDisplay: true))])

    // Cold start: the donations come back from the store.
    let old = (0..<3).map { Donation(at: t0 - sixMonths + Double($0) * 60) }
    let restored = Harness(snapshot: EngineSnapshot(donations: ["search.opened": old]))
    try restored.register(Self.filterTip())
    #expect(restored.lastTipChanges == [TipState(id: "filter.tip", status: .pending, shouldDisplay: false)])
    #expect(restored.engine.nextChangeTime() == nil)
    #expect(
      restored.donate("search.opened") == [.tip(TipState(id: "filter.tip", status: .available, shouldDisplay: true))])
  }

  @Test("seed 000 A/B variants: ids carry the variant, events stay shared, records are independent")
  func abVariants() throws {
    let h = Harness()
    try h.register(
      Self.filterTip("filter.tip.control", title: "tipkit.filter.title.control"),
      Self.filterTip("filter.tip.friendly", title: "tipkit.filter.title.friendly"))
    h.donate("search.opened", times: 2)
    #expect(
      h.donate("search.opened") == [
        .tip(TipState(id: "filter.tip.control", status: .available, shouldDisplay: true)),
        .tip(TipState(id: "filter.tip.friendly", status: .available, shouldDisplay: true)),
      ])
    h.apply(try h.engine.recordDisplay("filter.tip.control", duration: 4))
    h.apply(try h.engine.recordDisplay("filter.tip.control", duration: 2))
    h.apply(try h.engine.recordDisplay("filter.tip.friendly", duration: 1))
    #expect(h.engine.record(of: "filter.tip.control").displayCount == 2)
    #expect(h.engine.record(of: "filter.tip.friendly").displayCount == 1)
    h.apply(try h.engine.invalidate("filter.tip.control", reason: .tipClosed))
    #expect(h.status("filter.tip.control") == .invalidated(.tipClosed))
    #expect(h.shows("filter.tip.friendly"))
    // One filter.used donation reaches both arms.
    h.donate("filter.used")
    #expect(h.lastTipChanges == [TipState(id: "filter.tip.friendly", status: .pending, shouldDisplay: false)])
    #expect(h.engine.snapshot().tipRecords.keys.sorted() == ["filter.tip.control", "filter.tip.friendly"])
  }

  @Test("seed 002 TipGroup(.ordered): RotateMapTip appears only after ShowLocationTip is invalidated")
  func compassOrdered() throws {
    let h = Harness()
    try h.register(
      #"{"id": "ShowLocationTip", "title": "Show your location"}"#,
      #"{"id": "RotateMapTip", "title": "Reorient the map"}"#)
    h.apply(
      try h.engine.registerGroup(
        TipGroupDefinition(id: "compassTips", priority: .ordered, tipIDs: ["ShowLocationTip", "RotateMapTip"])))
    #expect(try h.engine.currentTip(ofGroup: "compassTips") == "ShowLocationTip")
    #expect(h.shows("ShowLocationTip") && !h.shows("RotateMapTip"))
    h.apply(try h.engine.recordDisplay("ShowLocationTip", duration: 3))
    #expect(!h.shows("RotateMapTip"))
    h.apply(try h.engine.invalidate("ShowLocationTip", reason: .actionPerformed))
    #expect(
      h.last == [
        .tip(TipState(id: "ShowLocationTip", status: .invalidated(.actionPerformed), shouldDisplay: false)),
        .tip(TipState(id: "RotateMapTip", status: .available, shouldDisplay: true)),
        .groupCurrentTip(groupID: "compassTips", tipID: "RotateMapTip"),
      ])
    h.apply(try h.engine.invalidate("RotateMapTip", reason: .actionPerformed))
    #expect(h.lastGroupChanges == ["compassTips": nil])
  }

  @Test("seed 002 TipGroup(.firstAvailable): whichever tip meets its rules first is shown, one at a time")
  func compassFirstAvailable() throws {
    let h = Harness()
    try h.register(
      #"{"id": "ShowLocationTip", "title": "L", "rules": [{"event": "compass.tapped", "count": {"gte": 1}}]}"#,
      #"{"id": "RotateMapTip", "title": "R", "rules": [{"event": "map.rotated", "count": {"gte": 1}}]}"#)
    h.apply(
      try h.engine.registerGroup(
        TipGroupDefinition(id: "compassTips", priority: .firstAvailable, tipIDs: ["ShowLocationTip", "RotateMapTip"])))
    h.donate("map.rotated")
    #expect(try h.engine.currentTip(ofGroup: "compassTips") == "RotateMapTip")
    h.donate("compass.tapped")
    #expect(try h.engine.currentTip(ofGroup: "compassTips") == "ShowLocationTip")
    #expect(h.engine.states().filter(\.shouldDisplay).map(\.id) == ["ShowLocationTip"])
  }

  @Test("seed 002 content ids: one NewTrailTip template, one id per trail, independent state")
  func newTrailTips() throws {
    let h = Harness()
    let trails = [(1, "north"), (2, "north"), (3, "south")]
    let definitions = try trails.map { id, region in
      try tip(
        """
        {"id": "NewTrailTip-\(id)", "title": "Trail \(id) is now available",
         "message": "To see key trail info, tap \(region) on the map.",
         "actions": [{"id": "go", "title": "Go there now"}],
         "rules": [{"event": "region.visited", "where": {"region": "\(region)"}, "count": {"gt": 3}}]}
        """)
    }
    h.apply(try h.engine.register(definitions))
    for _ in 0..<3 { h.donate("region.visited", ["region": "north"]) }
    h.donate("region.visited", ["region": "south"])
    #expect(h.engine.states().filter(\.shouldDisplay).isEmpty)
    h.donate("region.visited", ["region": "north"])
    #expect(h.lastTipChanges.map(\.id) == ["NewTrailTip-1", "NewTrailTip-2"])
    h.apply(try h.engine.invalidate("NewTrailTip-1", reason: .tipClosed))
    #expect(h.status("NewTrailTip-1") == .invalidated(.tipClosed))
    #expect(h.shows("NewTrailTip-2"))
    #expect(!h.shows("NewTrailTip-3"))
    for _ in 0..<3 { h.donate("region.visited", ["region": "south"]) }
    #expect(h.shows("NewTrailTip-3"))
    h.apply(try h.engine.recordDisplay("NewTrailTip-3"))
    #expect(h.engine.record(of: "NewTrailTip-3").displayCount == 1)
    #expect(h.engine.record(of: "NewTrailTip-2").displayCount == 0)
  }
}
