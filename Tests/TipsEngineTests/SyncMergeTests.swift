import Testing
import TipsEngine
import TipsJSON

/// The engine's side of sync: the donation order, and the merge entry points (Engine+Sync), each a mutation whose
/// writes replay to the engine's own state.
@Suite struct SyncMergeTests {
  func register(_ engine: Engine, _ json: String) throws -> Mutation {
    try engine.register([try tip(json)])
  }

  @Test func sameInstantDonationsKeepArrivalOrderUnlessCanonical() throws {
    for canonical in [false, true] {
      let harness = Harness(configuration: EngineConfiguration(canonicalDonationOrder: canonical))
      let engine = harness.engine
      harness.apply(try engine.setDonationLimit("trail", 3))
      for info in [["region": "north"], ["region": "south"], nil, nil, nil] as [JSONObject?] {
        harness.apply(try engine.donate("trail", info: info).mutation)
      }
      // Arrival order: the newest three are the three without values. Canonical: no values come first, so the
      // north and south donations are the newest of that instant.
      let expected: [JSONObject?] = canonical ? [nil, ["region": "north"], ["region": "south"]] : [nil, nil, nil]
      #expect(engine.donations("trail").map(\.info) == expected, "canonical: \(canonical)")
      #expect(engine.lifetimeCount("trail") == 5)
    }
  }

  @Test func aDonationOlderThanTheNewestIsInsertedInPlace() throws {
    let harness = Harness()
    let engine = harness.engine
    harness.apply(try engine.donate("e").mutation)
    harness.clock.advance(by: 10)
    harness.apply(try engine.donate("e").mutation)
    harness.clock.advance(by: -5)  // the clock went back
    let (_, _, mutation) = try engine.donate("e", info: ["late": true])
    harness.apply(mutation)
    #expect(engine.donations("e").map(\.at) == [t0, t0 + 5, t0 + 10])
    #expect(mutation.writes.contains { if case .donations = $0 { true } else { false } })
  }

  @Test func mergedDonationsLandInOrderAndSetTheLifetimeCount() throws {
    let harness = Harness(configuration: EngineConfiguration(canonicalDonationOrder: true))
    let engine = harness.engine
    harness.apply(try register(engine, #"{"id": "t", "title": "T", "rules": [{"event": "e", "count": {"gte": 4}}]}"#))
    harness.apply(try engine.setDonationLimit("e", 3))
    harness.apply(try engine.donate("e").mutation)
    // Newer than everything: appended.
    var mutation = engine.mergeDonations([Donation(at: t0 + 1)], lifetime: 2, intoEvent: "e")
    harness.apply(mutation)
    #expect(mutation.writes.allSatisfy { if case .donation = $0 { true } else { false } })
    // Older ones, some under the bound: the history is rewritten; the lifetime counts what other devices counted.
    mutation = engine.mergeDonations([Donation(at: t0 - 2), Donation(at: t0 + 0.5)], lifetime: 9, intoEvent: "e")
    harness.apply(mutation)
    #expect(engine.donations("e").map(\.at) == [t0, t0 + 0.5, t0 + 1])
    #expect(engine.lifetimeCount("e") == 9)
    #expect(engine.state(of: "t")?.status == .available)
    // Too old to be kept: only the count changes.
    mutation = engine.mergeDonations([Donation(at: t0 - 100)], lifetime: 10, intoEvent: "e")
    harness.apply(mutation)
    #expect(mutation.writes == [.lifetime(eventID: "e", 10)])
  }

  @Test func syncedRecordsAndParametersAreOrdinaryMutations() throws {
    let harness = Harness()
    let engine = harness.engine
    harness.apply(try engine.defineParameters([ParameterDefinition(id: "level", defaultValue: 0.5)]))
    harness.apply(try register(engine, #"{"id": "t", "title": "T", "rules": [{"parameter": "level", "gte": 2}]}"#))
    var mutation = engine.applySyncedParameter("level", 3)
    harness.apply(mutation)
    #expect(engine.parameterValue("level") == .double(3))
    #expect(engine.state(of: "t")?.shouldDisplay == true)
    #expect(engine.applySyncedParameter("level", "not a number").writes.isEmpty)
    mutation = engine.applySyncedRecord(
      TipRecord(invalidationReason: .tipClosed, invalidatedAt: t0, displayCount: 2), forKey: "t")
    harness.apply(mutation)
    #expect(engine.state(of: "t")?.status == .invalidated(.tipClosed))
    #expect(mutation.changes.contains(.tip(TipState(id: "t", status: .invalidated(.tipClosed), shouldDisplay: false))))
    // A record of a tip not registered here is kept for when it is.
    harness.apply(engine.applySyncedRecord(TipRecord(displayCount: 4), forKey: "later\u{1F}terse"))
    #expect(engine.record(forKey: "later\u{1F}terse").displayCount == 4)
    #expect(engine.recordKeys.sorted() == ["later\u{1F}terse", "t"])
    #expect(Engine.tipID(ofRecordKey: "later\u{1F}terse") == "later")
  }
}
