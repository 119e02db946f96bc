import Testing
import TipsEngine
import TipsJSON

/// An event's donations are stored as columns (instants, and associated values only while some stored donation has
/// any): every rule, the stored list and the snapshot must read exactly what a plain list of donations would.
@Suite("Donation storage: instants and associated values kept apart answer every rule as a list of donations")
struct DonationStorageTests {
  static let tips = [
    #"{"id": "north.tip", "title": "N", "rules": [{"event": "e", "where": {"region": "north"}, "count": {"gte": 3}}]}"#,
    #"{"id": "group.tip", "title": "G", "rules": [{"event": "e", "largestGroupBy": "region", "count": {"gte": 4}}]}"#,
    #"{"id": "hour.tip", "title": "H", "rules": [{"event": "e", "within": {"hours": 1}, "count": {"gte": 5}}]}"#,
    #"{"id": "count.tip", "title": "C", "rules": [{"event": "e", "count": {"gte": 90}}]}"#,
  ]

  /// What each rule reads, computed from a plain list of the donations kept (oldest first).
  static func expected(_ kept: [Donation], lifetime: Int, now: Timestamp) -> [String: Bool] {
    let north = kept.filter { $0.info?["region"] == "north" }.count
    var groups: [JSONValue: Int] = [:]
    for donation in kept { if let region = donation.info?["region"] { groups[region, default: 0] += 1 } }
    let hour = kept.filter { now - $0.at < 3_600 }.count
    return [
      "north.tip": north >= 3, "group.tip": (groups.values.max() ?? 0) >= 4, "hour.tip": hour >= 5,
      "count.tip": lifetime >= 90,
    ]
  }

  func check(_ h: Harness, _ kept: [Donation], lifetime: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(h.engine.donations("e") == kept, sourceLocation: sourceLocation)
    // Every event's stored donations, counted without copying them (a hosted account's budget check).
    let stored = h.engine.eventIDs.reduce(0) { $0 + h.engine.donations($1).count }
    #expect(h.engine.storedDonationCount == stored && stored >= kept.count, sourceLocation: sourceLocation)
    #expect(h.engine.lifetimeCount("e") == lifetime, sourceLocation: sourceLocation)
    for (id, shows) in Self.expected(kept, lifetime: lifetime, now: h.clock.now()) {
      #expect(h.shows(id) == shows, "\(id)", sourceLocation: sourceLocation)
    }
  }

  @Test("plain and valued donations mixed, trimmed past the last valued one (the column dropped), then valued again")
  func mixedAndTrimmed() throws {
    let h = Harness()
    try h.register(Self.tips[0], Self.tips[1], Self.tips[2], Self.tips[3])
    h.apply(try h.engine.setDonationLimit("e", 20))
    var kept: [Donation] = []
    var lifetime = 0
    func donate(_ info: JSONObject?) {
      h.donate("e", info)
      kept.append(Donation(at: h.clock.now(), info: info))
      if kept.count > 20 { kept.removeFirst(kept.count - 20) }
      lifetime += 1
    }
    for i in 0..<12 {
      donate(i % 3 == 0 ? nil : ["region": i % 2 == 0 ? "north" : "south"])
      h.advance(60)
    }
    check(h, kept, lifetime: lifetime)
    #expect(h.shows("north.tip") && h.shows("group.tip"))
    // Enough plain donations that every valued one leaves and the buffer compacts (more than 64 trimmed).
    for _ in 0..<100 {
      donate(nil)
      h.advance(30)
    }
    check(h, kept, lifetime: lifetime)
    #expect(!h.shows("north.tip") && !h.shows("group.tip") && h.shows("count.tip"))
    for _ in 0..<4 {
      donate(["region": "north"])
      h.advance(5)
    }
    check(h, kept, lifetime: lifetime)
    #expect(h.shows("north.tip") && h.shows("group.tip"))
    h.advance(4_000)
    check(h, kept, lifetime: lifetime)
  }

  @Test("a donation older than the newest (a clock that went back) lands in order with its associated values")
  func insertedInOrder() throws {
    let h = Harness()
    try h.register(Self.tips[0], Self.tips[1], Self.tips[2])
    h.donate("e")
    h.advance(100)
    h.donate("e")
    h.clock.set(t0 + 50)
    h.donate("e", ["region": "north"])
    h.clock.set(t0 + 200)
    h.donate("e", ["region": "south"])
    let kept = [
      Donation(at: t0), Donation(at: t0 + 50, info: ["region": "north"]), Donation(at: t0 + 100),
      Donation(at: t0 + 200, info: ["region": "south"]),
    ]
    check(h, kept, lifetime: 4)
  }

  /// ``Engine/storedDonationCount`` is a tally the logs keep as they store and drop donations: it must match their
  /// contents through every path that changes them.
  @Test("the stored-donation tally follows donations, limits, merges, resets and restores")
  func storedTally() throws {
    let h = Harness()
    try h.register(Self.tips[0], Self.tips[2])
    func expectTally(_ engine: Engine, sourceLocation: SourceLocation = #_sourceLocation) {
      let stored = engine.eventIDs.reduce(0) { $0 + engine.donations($1).count }
      #expect(engine.storedDonationCount == stored, sourceLocation: sourceLocation)
    }
    for i in 0..<30 {
      h.donate(i % 2 == 0 ? "e" : "f", i % 3 == 0 ? ["region": "north"] : nil)
      h.advance(10)
    }
    expectTally(h.engine)
    #expect(h.engine.storedDonationCount == 30)
    h.apply(try h.engine.setDonationLimit("e", 4))  // trims e's 15 to 4
    expectTally(h.engine)
    #expect(h.engine.storedDonationCount == 19)
    let merged = (0..<6).map { Donation(at: Double($0), info: nil) }
    h.apply(h.engine.mergeDonations(merged, lifetime: 40, intoEvent: "f"))
    expectTally(h.engine)
    h.apply(h.engine.mergeDonations(merged, lifetime: 40, intoEvent: "g"))  // a new event's log
    expectTally(h.engine)
    let second = Harness()
    try second.register(Self.tips[0], Self.tips[2])
    second.engine.restore(h.engine.snapshot())
    expectTally(second.engine)
    #expect(second.engine.storedDonationCount == h.engine.storedDonationCount)
    h.apply(h.engine.reset())
    expectTally(h.engine)
    #expect(h.engine.storedDonationCount == 0)
  }

  @Test("a snapshot of mixed donations restores to the same answers")
  func restored() throws {
    let first = Harness()
    try first.register(Self.tips[0], Self.tips[1], Self.tips[2])
    for i in 0..<9 {
      first.donate("e", i % 2 == 0 ? ["region": "north"] : nil)
      first.advance(10)
    }
    let stored = FakeStore.replaying(first.writes)
    let second = Harness(now: first.clock.now(), snapshot: stored)
    try second.register(Self.tips[0], Self.tips[1], Self.tips[2])
    check(second, first.engine.donations("e"), lifetime: 9)
    #expect(second.shows("north.tip") && second.shows("group.tip") && second.shows("hour.tip"))
  }
}

@Suite("Definition shelf: engines given one shelf share equal definitions, and each answers its own")
struct DefinitionShelfTests {
  @Test("a tip changed in one engine is on the shelf for the next; the other engine keeps the one it registered")
  func sharedAndReplaced() throws {
    let shelf = DefinitionShelf()
    let once = #"{"id": "t", "title": "T", "rules": [{"event": "e", "count": {"gte": 1}}]}"#
    let twice = #"{"id": "t", "title": "T", "rules": [{"event": "e", "count": {"gte": 2}}]}"#
    let a = Harness(configuration: EngineConfiguration(definitionShelf: shelf))
    let b = Harness(configuration: EngineConfiguration(definitionShelf: shelf))
    try a.register(once)
    try b.register(once)
    #expect(shelf.count == 1)
    try a.register(twice)
    #expect(shelf.count == 1)
    a.donate("e")
    b.donate("e")
    #expect(!a.shows("t") && b.shows("t"))
    let (onceTip, twiceTip) = (try tip(once), try tip(twice))
    #expect(a.engine.definition(of: "t") == twiceTip && b.engine.definition(of: "t") == onceTip)
    let c = Harness(configuration: EngineConfiguration(definitionShelf: shelf))
    try c.register(twice, #"{"id": "u", "title": "U"}"#)
    #expect(shelf.count == 2)
    c.donate("e")
    #expect(!c.shows("t") && c.shows("u"))
  }
}
