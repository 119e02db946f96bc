import Testing
import TipsEngine
import TipsJSON

@Suite("Donation ages (iOS 26 DonationLimit maximumAge): old donations are invisible to rules and trimmed")
struct DonationAgeTests {
  static let twice = #"{"id": "twice.tip", "title": "T", "rules": [{"event": "e", "count": {"gte": 2}}]}"#

  @Test("a plain count reads only donations younger than the age: the exact instant one ages out, the tip changes")
  func agesOut() throws {
    let h = Harness()
    h.apply(try h.engine.setDonationMaxAge("e", 3_600))
    try h.register(Self.twice)
    h.donate("e")
    h.advance(600)
    h.donate("e")
    #expect(h.shows("twice.tip"))
    #expect(h.engine.nextChangeTime() == t0 + 3_600)
    h.clock.set(t0 + 3_599)
    #expect(h.apply(h.engine.advanceTime()).isEmpty)
    h.clock.set(t0 + 3_600)
    let mutation = h.engine.advanceTime()
    #expect(mutation.writes == [.trimDonations(eventID: "e", keepNewest: 1)])
    h.apply(mutation)
    #expect(h.lastTipChanges == [TipState(id: "twice.tip", status: .pending, shouldDisplay: false)])
    #expect(h.engine.donationCount("e") == 1)
    // The lifetime count still counts every donation ever made.
    #expect(h.engine.lifetimeCount("e") == 2)
    let (count, lifetime, donated) = try h.engine.donate("e")
    h.apply(donated)
    #expect((count, lifetime) == (2, 3))
    #expect(h.shows("twice.tip"))
    let explained = try h.engine.explain("twice.tip").json["rules"]?[0]
    #expect(explained?["reads"] == "history")
    #expect(explained?["detail"]?.stringValue?.contains("younger than 1 hour") == true)
  }

  @Test("windows longer than the age, filters and largestGroupBy see only the young donations")
  func windowsAndFilters() throws {
    let h = Harness()
    try h.register(
      #"{"id": "week.tip", "title": "W", "rules": [{"event": "e", "within": {"weeks": 1}, "count": {"gte": 2}}]}"#,
      #"{"id": "north.tip", "title": "N", "rules": [{"event": "e", "where": {"region": "north"}, "count": {"gte": 2}}]}"#
    )
    h.donate("e", ["region": "north"])
    h.advance(100)
    h.donate("e", ["region": "north"])
    #expect(h.shows("week.tip") && h.shows("north.tip"))
    h.apply(try h.engine.setDonationMaxAge("e", 60))
    // The first donation is 100 s old, the second 0 s: one left, both tips fall.
    #expect(!h.shows("week.tip") && !h.shows("north.tip"))
    #expect(h.engine.donationCount("e") == 1)
    #expect(h.engine.nextChangeTime() == t0 + 160)
  }

  @Test("a restart trims what aged out while it was down, and rules never see it")
  func restart() throws {
    let first = Harness()
    first.apply(try first.engine.setDonationMaxAge("e", 3_600))
    first.donate("e")
    first.advance(1_800)
    first.donate("e")
    let stored = FakeStore.replaying(first.writes)
    #expect(stored.donationMaxAges == ["e": 3_600])
    #expect(stored.donations["e"]?.count == 2)

    let second = Harness(now: t0 + 3_700, snapshot: stored)
    let registered = try second.engine.register([try tip(Self.twice)])
    #expect(registered.writes.first == .trimDonations(eventID: "e", keepNewest: 1))
    second.apply(registered)
    #expect(!second.shows("twice.tip"))
    #expect(second.engine.lifetimeCount("e") == 2)
  }

  @Test("events/configure semantics: a positive age; removing it keeps what was trimmed gone")
  func configure() throws {
    let h = Harness()
    #expect(throws: EngineError.invalidArgument(argument: "maxAge", problem: "must be a positive duration")) {
      try h.engine.setDonationMaxAge("e", 0)
    }
    h.donate("e")
    h.advance(120)
    h.apply(try h.engine.setDonationMaxAge("e", 60))
    #expect(h.engine.donationCount("e") == 0 && h.engine.lifetimeCount("e") == 1)
    #expect(h.engine.donationMaxAge("e") == 60)
    h.apply(try h.engine.setDonationMaxAge("e", nil))
    #expect(h.engine.donationMaxAge("e") == nil)
    #expect(h.engine.donationCount("e") == 0)
    #expect(try h.engine.setDonationLimit("e", 10).writes == [.donationLimit(eventID: "e", limit: 10)])
  }
}
