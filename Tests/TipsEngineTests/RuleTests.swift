import Testing
import TipsEngine
import TipsJSON

@Suite("Rules")
struct RuleTests {
  @Test("a tip without rules is available at once")
  func noRules() throws {
    let h = Harness()
    let changes = try h.register(#"{"id": "a", "title": "A"}"#)
    #expect(changes == [.tip(TipState(id: "a", status: .available, shouldDisplay: true))])
  }

  static let countCases: [(op: String, value: Int, donations: Int, holds: Bool)] = [
    ("eq", 2, 1, false), ("eq", 2, 2, true), ("eq", 2, 3, false), ("eq", 0, 0, true),
    ("ne", 2, 1, true), ("ne", 2, 2, false), ("ne", 0, 0, false),
    ("lt", 2, 1, true), ("lt", 2, 2, false), ("lt", 1, 0, true),
    ("lte", 2, 2, true), ("lte", 2, 3, false), ("lte", 0, 0, true),
    ("gt", 2, 2, false), ("gt", 2, 3, true), ("gt", 0, 0, false),
    ("gte", 3, 2, false), ("gte", 3, 3, true), ("gte", 3, 4, true), ("gte", 0, 0, true),
  ]

  @Test("event count with every operator", arguments: countCases)
  func eventCount(op: String, value: Int, donations: Int, holds: Bool) throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"\#(op)": \#(value)}}]}"#)
    h.donate("e", times: donations)
    h.donate("other")
    #expect(h.engine.donationCount("e") == donations)
    #expect(h.status("a") == (holds ? .available : .pending))
    #expect(h.shows("a") == holds)
  }

  @Test("donate returns the stored count of the event")
  func donateCount() throws {
    let h = Harness()
    #expect(try h.engine.donate("e").count == 1)
    #expect(try h.engine.donate("e").count == 2)
    #expect(try h.engine.donate("f").count == 1)
    #expect(h.engine.donationCount("e") == 2)
    #expect(h.engine.donationCount("never") == 0)
  }

  @Test("a donation is inside a within window while now - donatedAt < window")
  func withinBoundary() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "within": {"hours": 1}, "count": {"gte": 1}}]}"#)
    #expect(h.status("a") == .pending)
    h.donate("e")
    #expect(h.status("a") == .available)
    h.advance(3_599.999)
    #expect(h.status("a") == .available)
    h.advance(0.001)
    #expect(h.status("a") == .pending)
  }

  @Test(
    "within units: minutes, hours, days and weeks",
    arguments: [("minutes", 60.0), ("hours", 3_600.0), ("days", 86_400.0), ("weeks", 604_800.0)])
  func withinUnits(unit: String, seconds: Double) throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "within": {"\#(unit)": 2}, "count": {"gte": 2}}]}"#)
    h.donate("e")
    h.clock.advance(by: seconds)
    h.donate("e")
    #expect(h.status("a") == .available)
    #expect(h.engine.nextChangeTime() == t0 + 2 * seconds)
    h.advance(seconds - 1)
    #expect(h.status("a") == .available)
    h.advance(1)
    #expect(h.status("a") == .pending)
    #expect(h.engine.nextChangeTime() == t0 + 3 * seconds)
  }

  @Test("where matches every given key by JSON equality")
  func whereMatching() throws {
    let h = Harness()
    try h.register(
      #"{"id": "north", "title": "N", "rules": [{"event": "trail.visited", "where": {"region": "north"}, "count": {"gt": 2}}]}"#,
      #"{"id": "both", "title": "B", "rules": [{"event": "trail.visited", "where": {"region": "north", "level": 2}, "count": {"gte": 2}}]}"#
    )
    h.donate("trail.visited", ["region": "north", "level": 2])
    h.donate("trail.visited", ["region": "south", "level": 2])
    h.donate("trail.visited", ["level": 2])
    h.donate("trail.visited")
    h.donate("trail.visited", ["region": "north", "level": .double(2.0)])  // 2.0 equals 2
    #expect(h.status("north") == .pending)  // 2 north donations, needs > 2
    #expect(h.status("both") == .available)
    h.donate("trail.visited", ["region": "north", "level": 3])
    #expect(h.status("north") == .available)
    #expect(h.engine.donationCount("trail.visited") == 6)
  }

  @Test("where combined with within counts only matching donations inside the window")
  func whereWithin() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "where": {"k": "x"}, "within": {"minutes": 10}, "count": {"gte": 2}}]}"#
    )
    h.donate("e", ["k": "x"])
    h.clock.advance(by: 300)
    h.donate("e", ["k": "y"])
    h.donate("e", ["k": "x"])
    #expect(h.status("a") == .available)
    h.advance(300)  // the first x leaves the window
    #expect(h.status("a") == .pending)
  }

  @Test("largestGroupBy counts the largest group and ignores donations without the key")
  func largestGroupBy() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "v", "largestGroupBy": "region", "count": {"gte": 3}}]}"#,
      #"{"id": "none", "title": "N", "rules": [{"event": "v", "largestGroupBy": "region", "count": {"eq": 0}}]}"#
    )
    #expect(h.status("none") == .available)  // no group counts 0
    h.donate("v", ["region": "north"])
    h.donate("v", ["region": "south"])
    h.donate("v", ["region": "north"])
    h.donate("v", ["other": "north"])
    h.donate("v")
    h.donate("v", ["region": "south"])
    #expect(h.status("a") == .pending)  // 2 north, 2 south
    #expect(h.status("none") == .pending)
    h.donate("v", ["region": .int(1)])
    h.donate("v", ["region": .double(1.0)])
    #expect(h.status("a") == .pending)  // 1 and 1.0 are one group of 2
    h.donate("v", ["region": 1])
    #expect(h.status("a") == .available)
  }

  @Test("largestGroupBy applies where and within first")
  func largestGroupByFiltered() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "v", "largestGroupBy": "trail", "where": {"kind": "hike"}, "within": {"days": 1}, "count": {"gte": 2}}]}"#
    )
    h.donate("v", ["trail": "t1", "kind": "hike"])
    h.clock.advance(by: 86_400)
    h.donate("v", ["trail": "t1", "kind": "bike"])
    h.donate("v", ["trail": "t2", "kind": "hike"])
    h.advance(0)
    #expect(h.status("a") == .pending)  // t1 hike is outside the window, t1 bike filtered out
    h.donate("v", ["trail": "t2", "kind": "hike"])
    #expect(h.status("a") == .available)
  }

  static let parameterCases: [(value: JSONValue, op: String, constant: String, holds: Bool)] = [
    (true, "eq", "true", true), (false, "eq", "true", false), (true, "ne", "true", false), (false, "ne", "true", true),
    (3, "eq", "3", true), (3, "eq", "3.0", true), (.double(3.0), "eq", "3", true), (3, "ne", "4", true),
    (3, "lt", "4", true), (3, "lt", "3", false), (3, "lte", "3", true), (3, "gt", "2.5", true),
    (3, "gte", "3.5", false), (.double(2.5), "gt", "2", true), (.double(2.5), "lte", "2.5", true),
    ("beta", "eq", #""beta""#, true), ("beta", "lt", #""gamma""#, true), ("beta", "gt", #""alpha""#, true),
    ("beta", "gte", #""beta""#, true), ("Beta", "lt", #""beta""#, true), ("b", "lt", #""ab""#, false),
    // mismatched types: orderings are false, eq false, ne true
    ("3", "eq", "3", false), ("3", "ne", "3", true), ("3", "lt", "4", false), (3, "gt", #""2""#, false),
    (true, "gt", "false", false), (true, "gte", "true", false), (1, "eq", "true", false),
  ]

  @Test("parameter comparisons", arguments: parameterCases)
  func parameterComparison(value: JSONValue, op: String, constant: String, holds: Bool) throws {
    let h = Harness()
    let defaultValue: JSONValue =
      switch value {
      case .bool: false
      case .int: 0
      case .double: 0.5
      default: ""
      }
    h.apply(try h.engine.defineParameters([ParameterDefinition(id: "p", defaultValue: defaultValue)]))
    h.apply(try h.engine.setParameter("p", value))
    try h.register(#"{"id": "a", "title": "A", "rules": [{"parameter": "p", "\#(op)": \#(constant)}]}"#)
    #expect(h.status("a") == (holds ? .available : .pending))
  }

  @Test("an undefined parameter reads null: only ne holds", arguments: ComparisonOperator.allCases)
  func undefinedParameter(op: ComparisonOperator) throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A", "rules": [{"parameter": "missing", "\#(op.rawValue)": 1}]}"#)
    #expect(h.status("a") == (op == .ne ? .available : .pending))
    #expect(h.engine.parameterValue("missing") == .null)
  }

  @Test("setting a parameter re-evaluates the tips that read it")
  func parameterChangeReevaluates() throws {
    let h = Harness()
    h.apply(try h.engine.defineParameters([ParameterDefinition(id: "isLoggedIn", defaultValue: false)]))
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"parameter": "isLoggedIn", "eq": true}]}"#,
      #"{"id": "b", "title": "B", "rules": [{"parameter": "isLoggedIn", "eq": false}]}"#,
      #"{"id": "c", "title": "C"}"#)
    #expect(h.status("a") == .pending && h.status("b") == .available)
    let changes = h.apply(try h.engine.setParameter("isLoggedIn", true))
    #expect(
      changes == [
        .tip(TipState(id: "a", status: .available, shouldDisplay: true)),
        .tip(TipState(id: "b", status: .pending, shouldDisplay: false)),
      ])
    #expect(h.apply(try h.engine.setParameter("isLoggedIn", true)).isEmpty)
  }

  @Test("allOf, anyOf and not combine rules")
  func combinators() throws {
    let h = Harness()
    try h.register(
      #"{"id": "all", "title": "A", "rules": [{"allOf": [{"event": "x", "count": {"gte": 1}}, {"event": "y", "count": {"gte": 1}}]}]}"#,
      #"{"id": "any", "title": "B", "rules": [{"anyOf": [{"event": "x", "count": {"gte": 1}}, {"event": "y", "count": {"gte": 1}}]}]}"#,
      #"{"id": "not", "title": "C", "rules": [{"not": {"event": "x", "count": {"gte": 1}}}]}"#,
      #"{"id": "nested", "title": "D", "rules": [{"anyOf": [{"not": {"anyOf": [{"event": "x", "count": {"gte": 1}}, {"event": "y", "count": {"gte": 1}}]}}, {"allOf": [{"event": "x", "count": {"gte": 2}}, {"event": "y", "count": {"gte": 1}}]}]}]}"#,
      #"{"id": "emptyAll", "title": "E", "rules": [{"allOf": []}]}"#,
      #"{"id": "emptyAny", "title": "F", "rules": [{"anyOf": []}]}"#
    )
    func statuses() -> [Bool] {
      ["all", "any", "not", "nested"].map { h.status($0) == .available }
    }
    #expect(statuses() == [false, false, true, true])
    #expect(h.status("emptyAll") == .available)
    #expect(h.status("emptyAny") == .pending)
    h.donate("x")
    #expect(statuses() == [false, true, false, false])
    h.donate("y")
    #expect(statuses() == [true, true, false, false])
    h.donate("x")
    #expect(statuses() == [true, true, false, true])
  }

  @Test("top-level rules are ANDed")
  func topLevelAnd() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "x", "count": {"gte": 1}}, {"event": "y", "count": {"eq": 0}}]}"#)
    h.donate("x")
    #expect(h.status("a") == .available)
    h.donate("y")
    #expect(h.status("a") == .pending)
  }

  @Test("events are shared by every tip that names them")
  func sharedEvents() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "opened", "count": {"gte": 1}}]}"#,
      #"{"id": "b", "title": "B", "rules": [{"event": "opened", "count": {"gte": 2}}]}"#)
    let first = h.donate("opened")
    #expect(first == [.tip(TipState(id: "a", status: .available, shouldDisplay: true))])
    let second = h.donate("opened")
    #expect(second == [.tip(TipState(id: "b", status: .available, shouldDisplay: true))])
    #expect(h.donate("opened").isEmpty)
  }

  @Test("the engine keeps only the newest donations of an event (default limit)")
  func defaultDonationLimit() throws {
    let h = Harness(configuration: EngineConfiguration(defaultDonationLimit: 5))
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "within": {"days": 1}, "count": {"gte": 6}}]}"#,
      #"{"id": "b", "title": "B", "rules": [{"event": "e", "where": {"k": 1}, "count": {"gte": 6}}]}"#,
      #"{"id": "life", "title": "L", "rules": [{"event": "e", "count": {"gte": 8}}]}"#)
    for i in 0..<8 {
      h.clock.advance(by: 1)
      let result = try h.engine.donate("e", info: ["i": .int(Int64(i)), "k": 1])
      h.apply(result.mutation)
      #expect(result.count == min(i + 1, 5))
      #expect(result.lifetime == i + 1)
      guard case .donation(_, _, let keep) = result.mutation.writes.first else {
        Issue.record("no donation write")
        return
      }
      #expect(keep == 5)
    }
    #expect(h.engine.donations("e").map { $0.info?["i"] } == [3, 4, 5, 6, 7])
    // Windows and filters read the kept history; a plain count reads every donation ever.
    #expect(h.status("a") == .pending)
    #expect(h.status("b") == .pending)
    #expect(h.status("life") == .available)
    #expect(h.engine.lifetimeCount("e") == 8)
    #expect(EngineConfiguration().defaultDonationLimit == 1000)
  }

  @Test("a per-event donation limit trims at once and re-evaluates")
  func donationLimit() throws {
    let h = Harness()
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "within": {"days": 1}, "count": {"gte": 3}}]}"#,
      #"{"id": "life", "title": "L", "rules": [{"event": "e", "count": {"gte": 3}}]}"#)
    h.donate("e", times: 4)
    #expect(h.status("a") == .available)
    let changes = h.apply(try h.engine.setDonationLimit("e", 2))
    // The windowed rule reads the trimmed history; the plain count still sees all four donations.
    #expect(changes == [.tip(TipState(id: "a", status: .pending, shouldDisplay: false))])
    #expect(h.status("life") == .available)
    #expect(h.engine.donationCount("e") == 2)
    let result = try h.engine.donate("e")
    h.apply(result.mutation)
    #expect(result.count == 2)
    #expect(result.lifetime == 5)
    #expect(h.engine.snapshot().donationLimits == ["e": 2])
    #expect(throws: EngineError.invalidArgument(argument: "maxDonations", problem: "must be at least 1 (got 0)")) {
      try h.engine.setDonationLimit("e", 0)
    }
    #expect(h.apply(try h.engine.setDonationLimit("e", 2)) == [])
  }
}
