import Testing
import TipsEngine
import TipsJSON

@Suite("Tip groups")
struct GroupTests {
  static func gatedTip(_ id: String, _ event: String) -> String {
    #"{"id": "\#(id)", "title": "\#(id)", "rules": [{"event": "\#(event)", "count": {"gte": 1}}]}"#
  }

  @Test("ordered: the first non-invalidated tip is current, and shown only when eligible")
  func ordered() throws {
    let h = Harness()
    try h.register(Self.gatedTip("a", "ea"), Self.gatedTip("b", "eb"), Self.gatedTip("c", "ec"))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["a", "b", "c"])))
    #expect(h.last == [.groupCurrentTip(groupID: "g", tipID: nil)])
    // b is available but a, still pending, blocks it.
    #expect(h.donate("eb") == [.tip(TipState(id: "b", status: .available, shouldDisplay: false))])
    #expect(try h.engine.currentTip(ofGroup: "g") == nil)
    #expect(
      h.donate("ea") == [
        .tip(TipState(id: "a", status: .available, shouldDisplay: true)), .groupCurrentTip(groupID: "g", tipID: "a"),
      ])
    // A merely displayed tip still blocks its successors.
    h.apply(try h.engine.recordDisplay("a"))
    #expect(try h.engine.currentTip(ofGroup: "g") == "a")
    #expect(!h.shows("b"))
    h.apply(try h.engine.invalidate("a", reason: .actionPerformed))
    #expect(
      h.last == [
        .tip(TipState(id: "a", status: .invalidated(.actionPerformed), shouldDisplay: false)),
        .tip(TipState(id: "b", status: .available, shouldDisplay: true)),
        .groupCurrentTip(groupID: "g", tipID: "b"),
      ])
    h.apply(try h.engine.invalidate("b", reason: .tipClosed))
    #expect(try h.engine.currentTip(ofGroup: "g") == nil)  // c is pending
    h.donate("ec")
    #expect(try h.engine.currentTip(ofGroup: "g") == "c")
    #expect(h.shows("c"))
  }

  @Test("firstAvailable: the first eligible tip in order is current")
  func firstAvailable() throws {
    let h = Harness()
    try h.register(Self.gatedTip("a", "ea"), Self.gatedTip("b", "eb"))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .firstAvailable, tipIDs: ["a", "b"])))
    #expect(
      h.donate("eb") == [
        .tip(TipState(id: "b", status: .available, shouldDisplay: true)), .groupCurrentTip(groupID: "g", tipID: "b"),
      ])
    #expect(
      h.donate("ea") == [
        .tip(TipState(id: "a", status: .available, shouldDisplay: true)),
        .tip(TipState(id: "b", status: .available, shouldDisplay: false)),
        .groupCurrentTip(groupID: "g", tipID: "a"),
      ])
    h.apply(try h.engine.invalidate("a", reason: .tipClosed))
    #expect(try h.engine.currentTip(ofGroup: "g") == "b")
    #expect(h.shows("b"))
  }

  @Test("groups respect display frequency")
  func groupsAndFrequency() throws {
    let h = Harness()
    h.apply(h.engine.configure(displayFrequency: .daily))
    try h.register(#"{"id": "other", "title": "O"}"#, #"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#)
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "ord", priority: .ordered, tipIDs: ["a", "b"])))
    #expect(try h.engine.currentTip(ofGroup: "ord") == "a")
    h.apply(try h.engine.recordDisplay("other"))
    #expect(try h.engine.currentTip(ofGroup: "ord") == nil)  // a is held back by the cooldown
    h.advance(86_400)
    #expect(try h.engine.currentTip(ofGroup: "ord") == "a")
    #expect(h.lastGroupChanges == ["ord": "a"])
  }

  @Test("a tip in two groups must be current in both")
  func twoGroups() throws {
    let h = Harness()
    try h.register(Self.gatedTip("a", "ea"), Self.gatedTip("b", "eb"), Self.gatedTip("c", "ec"))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g1", priority: .firstAvailable, tipIDs: ["a", "b"])))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g2", priority: .firstAvailable, tipIDs: ["c", "b"])))
    h.donate("eb")
    #expect(h.shows("b"))
    #expect(try h.engine.currentTip(ofGroup: "g1") == "b" && h.engine.currentTip(ofGroup: "g2") == "b")
    h.donate("ec")  // c takes over g2: b is current in g1 only
    #expect(try h.engine.currentTip(ofGroup: "g1") == "b")
    #expect(!h.shows("b") && h.shows("c"))
    h.apply(try h.engine.invalidate("c", reason: .tipClosed))
    #expect(h.shows("b"))
  }

  @Test("a group may list tips registered later, or never")
  func lateRegistration() throws {
    let h = Harness()
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["ghost", "a", "b"])))
    #expect(h.last == [.groupCurrentTip(groupID: "g", tipID: nil)])
    try h.register(#"{"id": "b", "title": "B"}"#)
    #expect(
      h.last == [
        .tip(TipState(id: "b", status: .available, shouldDisplay: true)), .groupCurrentTip(groupID: "g", tipID: "b"),
      ])
    try h.register(#"{"id": "a", "title": "A"}"#)
    #expect(
      h.last == [
        .tip(TipState(id: "b", status: .available, shouldDisplay: false)),
        .tip(TipState(id: "a", status: .available, shouldDisplay: true)),
        .groupCurrentTip(groupID: "g", tipID: "a"),
      ])
    h.apply(h.engine.unregister(["a"]))
    #expect(
      h.last == [
        .tip(TipState(id: "a", status: .available, shouldDisplay: false)),
        .tip(TipState(id: "b", status: .available, shouldDisplay: true)),
        .groupCurrentTip(groupID: "g", tipID: "b"),
      ])
  }

  @Test("replacing and unregistering groups")
  func replaceAndUnregister() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#, #"{"id": "c", "title": "C"}"#)
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["a", "b"])))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "h", priority: .ordered, tipIDs: ["c"])))
    #expect(!h.shows("b"))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["b"])))
    #expect(
      h.last == [
        .tip(TipState(id: "b", status: .available, shouldDisplay: true)), .groupCurrentTip(groupID: "g", tipID: "b"),
      ])
    #expect(h.shows("a"))
    #expect(h.engine.groupIDs == ["g", "h"])
    #expect(h.engine.group("g") == TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["b"]))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["a", "b"])))
    #expect(!h.shows("b"))
    h.apply(try h.engine.unregisterGroup("g"))
    #expect(h.lastTipChanges == [TipState(id: "b", status: .available, shouldDisplay: true)])
    #expect(h.engine.groupIDs == ["h"])
    #expect(h.engine.group("g") == nil)
    #expect(throws: EngineError.unknownGroup("g")) { try h.engine.unregisterGroup("g") }
    #expect(throws: EngineError.unknownGroup("g")) { try h.engine.currentTip(ofGroup: "g") }
  }

  @Test("testing overrides outrank groups")
  func overridesOutrankGroups() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#)
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "g", priority: .ordered, tipIDs: ["a", "b"])))
    h.apply(h.engine.setTestingOverride(.show(["b"])))
    #expect(h.shows("a") && h.shows("b"))
    h.apply(h.engine.setTestingOverride(.hide(["a"])))
    // a is hidden: not eligible, but still the first non-invalidated tip of an ordered group.
    #expect(try h.engine.currentTip(ofGroup: "g") == nil)
    #expect(!h.shows("a") && h.shows("b"))
    h.apply(try h.engine.registerGroup(TipGroupDefinition(id: "f", priority: .firstAvailable, tipIDs: ["a", "b"])))
    #expect(try h.engine.currentTip(ofGroup: "f") == "b")
  }
}
