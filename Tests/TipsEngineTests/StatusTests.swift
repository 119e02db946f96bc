import Testing
import TipsEngine
import TipsJSON

@Suite("Status transitions, impressions and change reporting")
struct StatusTests {
  static let gated = #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}]}"#

  @Test("pending → available → pending as rules start and stop holding")
  func pendingAvailablePending() throws {
    let h = Harness()
    #expect(try h.register(Self.gated) == [.tip(TipState(id: "a", status: .pending, shouldDisplay: false))])
    #expect(h.donate("e") == [.tip(TipState(id: "a", status: .available, shouldDisplay: true))])
    #expect(h.donate("e").isEmpty)
    try h.register(#"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 3}}]}"#)
    #expect(h.lastTipChanges == [TipState(id: "a", status: .pending, shouldDisplay: false)])
  }

  @Test("invalidation from available and from pending, with each reason", arguments: InvalidationReason.allCases)
  func invalidate(reason: InvalidationReason) throws {
    let h = Harness()
    try h.register(Self.gated, #"{"id": "b", "title": "B"}"#)
    h.apply(try h.engine.invalidate("a", reason: reason))
    #expect(h.lastTipChanges == [TipState(id: "a", status: .invalidated(reason), shouldDisplay: false)])
    h.apply(try h.engine.invalidate("b", reason: reason))
    #expect(h.lastTipChanges == [TipState(id: "b", status: .invalidated(reason), shouldDisplay: false)])
    #expect(h.engine.record(of: "b").invalidationReason == reason)
    #expect(h.engine.record(of: "b").invalidatedAt == t0)
    // Invalidation is permanent: rules holding changes nothing.
    #expect(h.donate("e").isEmpty)
    #expect(h.status("a") == .invalidated(reason))
  }

  @Test("invalidating an invalidated tip keeps the first reason and changes nothing")
  func invalidateTwice() throws {
    let h = Harness()
    try h.register(#"{"id": "b", "title": "B"}"#)
    h.apply(try h.engine.invalidate("b", reason: .tipClosed))
    h.clock.advance(by: 10)
    let mutation = try h.engine.invalidate("b", reason: .actionPerformed)
    #expect(mutation == .none)
    #expect(h.status("b") == .invalidated(.tipClosed))
    #expect(h.engine.record(of: "b").invalidatedAt == t0)
  }

  @Test("resetEligibility brings an invalidated tip back and clears its display budget")
  func resetEligibility() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}], "options": {"maxDisplayCount": 2}}"#,
      #"{"id": "b", "title": "B"}"#)
    h.donate("e")
    h.apply(try h.engine.recordDisplay("a", duration: 5))
    h.apply(try h.engine.recordDisplay("a", duration: 5))
    #expect(h.status("a") == .invalidated(.displayCountExceeded))
    h.apply(try h.engine.resetEligibility("a"))
    #expect(h.lastTipChanges == [TipState(id: "a", status: .available, shouldDisplay: true)])
    #expect(h.engine.record(of: "a") == TipRecord())
    #expect(h.engine.donationCount("e") == 1)  // donations untouched
    // The budget starts afresh: one display is not enough to exceed it again.
    h.apply(try h.engine.recordDisplay("a"))
    #expect(h.status("a") == .available)

    h.apply(try h.engine.invalidate("b", reason: .tipClosed))
    try h.register(#"{"id": "b", "title": "B", "rules": [{"event": "never", "count": {"gte": 1}}]}"#)
    h.apply(try h.engine.resetEligibility("b"))
    #expect(h.lastTipChanges == [TipState(id: "b", status: .pending, shouldDisplay: false)])
    #expect(try h.engine.resetEligibility("b") == .none)
  }

  @Test("recordDisplay counts, adds duration and stamps first and last display")
  func recordDisplay() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#)
    let first = try h.engine.recordDisplay("a", duration: 2.5)
    h.apply(first)
    #expect(first.changes.isEmpty)
    h.clock.advance(by: 100)
    h.apply(try h.engine.recordDisplay("a", duration: 4))
    #expect(
      h.engine.record(of: "a")
        == TipRecord(displayCount: 2, displayedDuration: 6.5, firstDisplayedAt: t0, lastDisplayedAt: t0 + 100))
    #expect(h.engine.snapshot().cooldownStartedAt == t0 + 100)
  }

  @Test("maxDisplayCount invalidates at the limit", arguments: [1, 2, 5])
  func maxDisplayCount(limit: Int) throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A", "options": {"maxDisplayCount": \#(limit)}}"#)
    for _ in 1..<limit { h.apply(try h.engine.recordDisplay("a")) }
    #expect(h.status("a") == .available)
    h.apply(try h.engine.recordDisplay("a"))
    #expect(h.lastTipChanges == [TipState(id: "a", status: .invalidated(.displayCountExceeded), shouldDisplay: false)])
  }

  @Test("maxDisplayDuration invalidates when the cumulative duration reaches it")
  func maxDisplayDuration() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A", "options": {"maxDisplayDuration": 60}}"#)
    h.apply(try h.engine.recordDisplay("a", duration: 30))
    h.apply(try h.engine.recordDisplay("a", duration: 29.5))
    #expect(h.status("a") == .available)
    h.apply(try h.engine.recordDisplay("a", duration: 0.5))
    #expect(h.status("a") == .invalidated(.displayDurationExceeded))
  }

  @Test("the count budget is checked before the duration budget")
  func countBeforeDuration() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A", "options": {"maxDisplayCount": 1, "maxDisplayDuration": 10}}"#)
    h.apply(try h.engine.recordDisplay("a", duration: 20))
    #expect(h.status("a") == .invalidated(.displayCountExceeded))
  }

  @Test("a display of an invalidated tip is recorded but keeps its reason")
  func displayInvalidated() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A", "options": {"maxDisplayCount": 1}}"#)
    h.apply(try h.engine.invalidate("a", reason: .tipClosed))
    let mutation = try h.engine.recordDisplay("a", duration: 3)
    h.apply(mutation)
    #expect(mutation.changes.isEmpty)
    #expect(h.status("a") == .invalidated(.tipClosed))
    #expect(h.engine.record(of: "a").displayCount == 1)
  }

  @Test("bad arguments and unknown ids are rejected")
  func errors() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#)
    #expect(throws: EngineError.unknownTip("x")) { try h.engine.recordDisplay("x") }
    #expect(throws: EngineError.unknownTip("x")) { try h.engine.invalidate("x", reason: .tipClosed) }
    #expect(throws: EngineError.unknownTip("x")) { try h.engine.resetEligibility("x") }
    #expect(throws: EngineError.unknownTip("x")) { try h.engine.explain("x") }
    #expect(
      throws: EngineError.invalidArgument(argument: "duration", problem: "must be a non-negative number of seconds")
    ) {
      try h.engine.recordDisplay("a", duration: -1)
    }
    #expect(
      throws: EngineError.invalidArgument(argument: "duration", problem: "must be a non-negative number of seconds")
    ) {
      try h.engine.recordDisplay("a", duration: .infinity)
    }
    #expect(h.engine.record(of: "a") == TipRecord())
  }

  @Test("re-registering an id replaces its definition and keeps its state")
  func replaceDefinition() throws {
    let h = Harness()
    try h.register(Self.gated)
    h.donate("e")
    h.apply(try h.engine.recordDisplay("a"))
    let changes = try h.register(
      #"{"id": "a", "title": "A2", "rules": [{"event": "e", "count": {"gte": 1}}, {"event": "f", "count": {"gte": 1}}]}"#
    )
    #expect(changes == [.tip(TipState(id: "a", status: .pending, shouldDisplay: false))])
    #expect(h.engine.definition(of: "a")?.title == "A2")
    #expect(h.engine.record(of: "a").displayCount == 1)
    #expect(h.engine.registeredTipIDs == ["a"])
    // The old dependency on e alone is gone, the new one on f works.
    #expect(h.donate("f") == [.tip(TipState(id: "a", status: .available, shouldDisplay: true))])
    // Re-registering an identical definition reports nothing.
    #expect(try h.register(#"{"id": "a", "title": "A2", "rules": [{"event": "f", "count": {"gte": 1}}]}"#).isEmpty)
  }

  @Test("a new tip is reported once, even when pending")
  func newTipReportedOnce() throws {
    let h = Harness()
    #expect(
      try h.register(Self.gated, #"{"id": "b", "title": "B"}"#) == [
        .tip(TipState(id: "a", status: .pending, shouldDisplay: false)),
        .tip(TipState(id: "b", status: .available, shouldDisplay: true)),
      ])
    #expect(try h.register(#"{"id": "b", "title": "B"}"#).isEmpty)
  }

  @Test("unregister reports shouldDisplay false once, keeps the record, and re-registering restores it")
  func unregister() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A"}"#, #"{"id": "p", "title": "P", "rules": [{"event": "e", "count": {"gte": 1}}]}"#)
    h.apply(try h.engine.recordDisplay("a"))
    let changes = h.apply(h.engine.unregister(["a", "p", "unknown"]))
    #expect(changes == [.tip(TipState(id: "a", status: .available, shouldDisplay: false))])
    #expect(h.engine.registeredTipIDs.isEmpty)
    #expect(h.engine.state(of: "a") == nil)
    #expect(h.engine.record(of: "a").displayCount == 1)
    #expect(h.engine.snapshot().tipRecords["a"]?.displayCount == 1)
    #expect(h.apply(h.engine.unregister(["a"])).isEmpty)
    #expect(throws: EngineError.unknownTip("a")) { try h.engine.invalidate("a", reason: .tipClosed) }
    // Donations to an event an unregistered tip read reach nobody.
    #expect(h.donate("e").isEmpty)
    try h.register(#"{"id": "a", "title": "A"}"#)
    #expect(h.lastTipChanges == [TipState(id: "a", status: .available, shouldDisplay: true)])
    #expect(h.engine.record(of: "a").displayCount == 1)
    #expect(h.engine.registeredTipIDs == ["a"])
  }

  @Test("states come in registration order; unknown ids are skipped")
  func statesOrder() throws {
    let h = Harness()
    try h.register(#"{"id": "c", "title": "C"}"#, #"{"id": "a", "title": "A"}"#, #"{"id": "b", "title": "B"}"#)
    #expect(h.engine.states().map(\.id) == ["c", "a", "b"])
    #expect(h.engine.states(["b", "zz", "c"]).map(\.id) == ["b", "c"])
    h.apply(h.engine.unregister(["a"]))
    try h.register(#"{"id": "a", "title": "A"}"#)
    #expect(h.engine.registeredTipIDs == ["c", "b", "a"])
  }

  @Test("change reports come in registration order and only for tips whose state changed")
  func changeOrder() throws {
    let h = Harness()
    try h.register(
      #"{"id": "z", "title": "Z", "rules": [{"event": "e", "count": {"gte": 1}}]}"#,
      #"{"id": "m", "title": "M", "rules": [{"event": "e", "count": {"gte": 2}}]}"#,
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}]}"#)
    #expect(h.donate("e").map { if case .tip(let s) = $0 { s.id } else { "" } } == ["z", "a"])
    #expect(h.donate("e").map { if case .tip(let s) = $0 { s.id } else { "" } } == ["m"])
  }
}
