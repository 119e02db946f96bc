import Testing
import TipsEngine
import TipsJSON
import TipsTestSupport

@Suite("Durable state: writes, snapshot, restore, reset, parameters")
struct PersistenceTests {
  @Test("restore before registration brings back donations, parameters, records, cooldown, frequency and limits")
  func restore() throws {
    let snapshot = EngineSnapshot(
      donations: ["e": [Donation(at: t0 - 100), Donation(at: t0 - 50, info: ["k": "v"])]],
      parameters: ["isLoggedIn": true],
      tipRecords: [
        "closed": TipRecord(invalidationReason: .tipClosed, invalidatedAt: t0 - 10),
        "seen": TipRecord(displayCount: 1, displayedDuration: 3, firstDisplayedAt: t0 - 60, lastDisplayedAt: t0 - 60),
        "orphan": TipRecord(displayCount: 4),
      ],
      cooldownStartedAt: t0 - 60, displayFrequency: .hourly, donationLimits: ["e": 2])
    let h = Harness(snapshot: snapshot)
    #expect(h.engine.snapshot() == snapshot)
    h.apply(try h.engine.defineParameters([ParameterDefinition(id: "isLoggedIn", defaultValue: false)]))
    try h.register(
      #"{"id": "closed", "title": "C"}"#, #"{"id": "seen", "title": "S"}"#, #"{"id": "fresh", "title": "F"}"#,
      #"{"id": "needs", "title": "N", "rules": [{"event": "e", "count": {"eq": 2}}, {"parameter": "isLoggedIn", "eq": true}]}"#
    )
    #expect(h.status("closed") == .invalidated(.tipClosed))
    #expect(h.shows("seen"))
    #expect(h.status("fresh") == .pending)  // cooldown until t0 + 3540
    #expect(h.status("needs") == .pending)  // also held by the cooldown
    #expect(h.engine.nextChangeTime() == t0 + 3_540)
    #expect(try h.engine.donate("e").count == 2)  // limit 2
    #expect(h.engine.snapshot().tipRecords["orphan"] == TipRecord(displayCount: 4))
    #expect(h.engine.displayFrequency == .hourly)
    #expect(h.engine.parameterValue("isLoggedIn") == true)
  }

  @Test("restore after registration reports the resulting changes with the next mutation")
  func restoreAfterRegistration() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A"}"#)
    h.engine.restore(EngineSnapshot(tipRecords: ["a": TipRecord(invalidationReason: .tipClosed)]))
    h.writes = Harness.writes(reproducing: h.engine.snapshot())
    #expect(h.status("a") == .invalidated(.tipClosed))
    #expect(
      h.apply(h.engine.advanceTime()) == [
        .tip(TipState(id: "a", status: .invalidated(.tipClosed), shouldDisplay: false))
      ])
  }

  @Test("restore while running (after a failed commit) replaces persisted parameters and keeps transient values")
  func restoreKeepsTransientParameters() throws {
    let h = Harness()
    h.apply(
      try h.engine.defineParameters([
        ParameterDefinition(id: "session", defaultValue: 0, transient: true),
        ParameterDefinition(id: "kept", defaultValue: 0),
      ]))
    h.apply(try h.engine.setParameter("session", 3))
    h.apply(try h.engine.setParameter("kept", 7))
    h.engine.restore(EngineSnapshot(parameters: ["kept": 5]))
    #expect(h.engine.parameterValue("session") == 3)
    #expect(h.engine.parameterValue("kept") == 5)
    h.engine.restore(EngineSnapshot())
    #expect(h.engine.parameterValue("session") == 3)
    #expect(h.engine.parameterValue("kept") == 0)
  }

  @Test("reset clears durable state, keeps definitions, frequency, limits and overrides, and writes .reset first")
  func reset() throws {
    let h = Harness()
    h.apply(
      try h.engine.defineParameters([
        ParameterDefinition(id: "n", defaultValue: 0),
        ParameterDefinition(id: "session", defaultValue: 0, transient: true),
      ]))
    h.apply(try h.engine.setParameter("session", 3))
    h.apply(h.engine.configure(displayFrequency: .daily))
    h.apply(try h.engine.setDonationLimit("e", 10))
    try h.register(
      #"{"id": "a", "title": "A", "rules": [{"event": "e", "count": {"gte": 1}}, {"parameter": "n", "eq": 1}]}"#,
      #"{"id": "b", "title": "B"}"#)
    h.donate("e")
    h.apply(try h.engine.setParameter("n", 1))
    h.apply(try h.engine.recordDisplay("a"))
    h.apply(try h.engine.invalidate("b", reason: .tipClosed))
    let mutation = h.engine.reset()
    h.apply(mutation)
    #expect(mutation.writes == [.reset, .displayFrequency(.daily), .donationLimit(eventID: "e", limit: 10)])
    #expect(
      mutation.changes == [
        .tip(TipState(id: "a", status: .pending, shouldDisplay: false)),
        .tip(TipState(id: "b", status: .available, shouldDisplay: true)),
      ])
    #expect(h.engine.snapshot() == EngineSnapshot(displayFrequency: .daily, donationLimits: ["e": 10]))
    #expect(h.engine.parameterValue("n") == 0)
    #expect(h.engine.parameterValue("session") == 0)
    #expect(h.engine.registeredTipIDs == ["a", "b"])
    #expect(h.engine.nextChangeTime() == nil)
  }

  @Test("transient parameters go back to their default, are never written, and are deleted from the store")
  func transientParameters() throws {
    let h = Harness(snapshot: EngineSnapshot(parameters: ["session": 5, "kept": 7]))
    let mutation = try h.engine.defineParameters([
      ParameterDefinition(id: "session", defaultValue: 0, transient: true),
      ParameterDefinition(id: "kept", defaultValue: 0),
    ])
    h.apply(mutation)
    #expect(mutation.writes == [.deleteParameter(id: "session")])
    #expect(h.engine.parameterValue("session") == 0)
    #expect(h.engine.parameterValue("kept") == 7)
    let set = try h.engine.setParameter("session", 3)
    h.apply(set)
    #expect(set.writes.isEmpty)
    #expect(h.engine.parameterValue("session") == 3)
    #expect(h.engine.snapshot().parameters == ["kept": 7])
  }

  @Test("parameter types are enforced; an Int is accepted where a Double is declared")
  func parameterTypes() throws {
    let h = Harness()
    h.apply(
      try h.engine.defineParameters([
        ParameterDefinition(id: "b", defaultValue: false), ParameterDefinition(id: "i", defaultValue: 1),
        ParameterDefinition(id: "d", defaultValue: 0.5), ParameterDefinition(id: "s", defaultValue: "x"),
      ]))
    #expect(throws: EngineError.parameterTypeMismatch(id: "b", expected: "bool", got: "string")) {
      try h.engine.setParameter("b", "true")
    }
    #expect(throws: EngineError.parameterTypeMismatch(id: "i", expected: "int", got: "double")) {
      try h.engine.setParameter("i", 1.5)
    }
    #expect(throws: EngineError.parameterTypeMismatch(id: "s", expected: "string", got: "null")) {
      try h.engine.setParameter("s", nil)
    }
    #expect(throws: EngineError.unknownParameter("zz")) { try h.engine.setParameter("zz", 1) }
    let mutation = try h.engine.setParameter("d", 2)
    h.apply(mutation)
    #expect(mutation.writes == [.parameter(id: "d", value: .double(2))])
    #expect(h.engine.parameterValue("d") == .double(2))
    #expect(
      throws: EngineError.invalidArgument(
        argument: "parameters[0].default", problem: "must be a boolean, number or string (got object)")
    ) {
      try h.engine.defineParameters([ParameterDefinition(id: "o", defaultValue: [:])])
    }
    #expect(throws: EngineError.invalidArgument(argument: "parameters[0].id", problem: "must not be empty")) {
      try h.engine.defineParameters([ParameterDefinition(id: "", defaultValue: 1)])
    }
    #expect(h.engine.parameterValue("o") == .null)
  }

  @Test("a stored value of another type than a redefined default is dropped")
  func redefinedType() throws {
    let h = Harness(snapshot: EngineSnapshot(parameters: ["p": "text", "q": 3]))
    let mutation = try h.engine.defineParameters([
      ParameterDefinition(id: "p", defaultValue: 0), ParameterDefinition(id: "q", defaultValue: 0.5),
    ])
    h.apply(mutation)
    #expect(mutation.writes == [.deleteParameter(id: "p")])
    #expect(h.engine.parameterValue("p") == 0)
    #expect(h.engine.parameterValue("q") == .double(3))
  }

  @Test("defining a parameter re-evaluates tips that read it")
  func defineReevaluates() throws {
    let h = Harness()
    try h.register(#"{"id": "a", "title": "A", "rules": [{"parameter": "flag", "eq": true}]}"#)
    h.apply(try h.engine.defineParameters([ParameterDefinition(id: "flag", defaultValue: true)]))
    #expect(h.lastTipChanges == [TipState(id: "a", status: .available, shouldDisplay: true)])
  }

  @Test(
    "random operations: writes replay to the snapshot, reports match the state, and a fresh engine agrees",
    arguments: [2024, 7, 31337] as [UInt64])
  func randomOperations(seed: UInt64) throws {
    var random = SplitMix64(seed: seed)
    let tipPool = [
      #"{"id": "TIP", "title": "T"}"#,
      #"{"id": "TIP", "title": "T", "rules": [{"event": "e0", "count": {"gte": 2}}]}"#,
      #"{"id": "TIP", "title": "T", "rules": [{"event": "e1", "within": {"minutes": 30}, "count": {"gte": 1}}]}"#,
      #"{"id": "TIP", "title": "T", "rules": [{"event": "e0", "where": {"k": 1}, "within": {"hours": 1}, "count": {"gt": 0}}]}"#,
      #"{"id": "TIP", "title": "T", "rules": [{"event": "e2", "largestGroupBy": "k", "count": {"gte": 2}}]}"#,
      #"{"id": "TIP", "title": "T", "rules": [{"parameter": "p", "gt": 1}], "options": {"maxDisplayCount": 2}}"#,
      #"{"id": "TIP", "title": "T", "rules": [{"not": {"event": "e1", "within": {"minutes": 10}, "count": {"gte": 1}}}], "options": {"ignoresDisplayFrequency": true}}"#,
      #"{"id": "TIP", "title": "T", "rules": [{"anyOf": [{"event": "e3", "count": {"eq": 1}}, {"parameter": "q", "eq": "on"}]}], "options": {"maxDisplayDuration": 30}}"#,
    ]
    let ids = (0..<7).map { "t\($0)" }
    let parameters = [ParameterDefinition(id: "p", defaultValue: 0), ParameterDefinition(id: "q", defaultValue: "off")]
    let h = Harness()
    var overrides: [TestingOverride] = []
    h.apply(try h.engine.defineParameters(parameters))
    func randomTip() throws -> TipDefinition {
      let id = ids.randomElement(using: &random)!
      let template = tipPool.randomElement(using: &random)!
      var text = ""
      for part in template.split(separator: "TIP", omittingEmptySubsequences: false) {
        text += text.isEmpty && part.isEmpty ? "" : (text.isEmpty ? String(part) : id + part)
      }
      if template.hasPrefix("TIP") { text = id + text }
      return try tip(text)
    }
    for _ in 0..<6 { h.apply(try h.engine.register([try randomTip()])) }

    for step in 0..<1_500 {
      let roll = Int.random(in: 0..<100, using: &random)
      let id = ids.randomElement(using: &random)!
      switch roll {
      case 0..<30:
        let event = "e\(Int.random(in: 0..<4, using: &random))"
        let info: JSONObject? = Bool.random(using: &random) ? ["k": .int(Int64.random(in: 0..<3, using: &random))] : nil
        h.apply(try h.engine.donate(event, info: info).mutation)
      case 30..<45:
        h.clock.advance(by: [1.0, 60, 600, 1_800, 3_600, 86_400].randomElement(using: &random)!)
        if Bool.random(using: &random) { h.apply(h.engine.advanceTime()) }
      case 45..<53:
        if h.engine.state(of: id) != nil {
          h.apply(try h.engine.recordDisplay(id, duration: Double.random(in: 0..<20, using: &random)))
        }
      case 53..<58:
        if h.engine.state(of: id) != nil { h.apply(try h.engine.invalidate(id, reason: .tipClosed)) }
      case 58..<61:
        if h.engine.state(of: id) != nil { h.apply(try h.engine.resetEligibility(id)) }
      case 61..<67:
        if Bool.random(using: &random) {
          h.apply(try h.engine.setParameter("p", .int(Int64.random(in: 0..<4, using: &random))))
        } else {
          h.apply(try h.engine.setParameter("q", Bool.random(using: &random) ? "on" : "off"))
        }
      case 67..<72:
        let override: TestingOverride = [.showAll, .hideAll, .show([id]), .hide([id]), .clear].randomElement(
          using: &random)!
        if override == .clear { overrides = [] } else { overrides.append(override) }
        h.apply(h.engine.setTestingOverride(override))
      case 72..<75:
        h.apply(h.engine.configure(displayFrequency: DisplayFrequency.allCases.randomElement(using: &random)!))
      case 75..<83:
        h.apply(try h.engine.register([try randomTip()]))
      case 83..<87:
        h.apply(h.engine.unregister([id]))
      case 87..<92:
        let members = ids.shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random))
        let priority: GroupPriority = Bool.random(using: &random) ? .ordered : .firstAvailable
        h.apply(
          try h.engine.registerGroup(
            TipGroupDefinition(
              id: "g\(Int.random(in: 0..<2, using: &random))", priority: priority, tipIDs: Array(members))))
      case 92..<94:
        if h.engine.group("g0") != nil { h.apply(try h.engine.unregisterGroup("g0")) }
      case 94..<97:
        h.apply(
          try h.engine.setDonationLimit(
            "e\(Int.random(in: 0..<4, using: &random))", Int.random(in: 1...5, using: &random)))
      default:
        h.apply(h.engine.reset())
      }

      if step % 25 == 0 {
        h.apply(h.engine.advanceTime())
        // A fresh engine built from the durable state and the same definitions must agree with the incremental one.
        let fresh = Engine(clock: h.clock)
        fresh.restore(h.engine.snapshot())
        _ = try fresh.defineParameters(parameters)
        _ = fresh.configure(displayFrequency: h.engine.displayFrequency)
        _ = try fresh.register(h.engine.registeredTipIDs.compactMap { h.engine.definition(of: $0) })
        for group in h.engine.groupIDs { _ = try fresh.registerGroup(h.engine.group(group)!) }
        for override in overrides { _ = fresh.setTestingOverride(override) }
        #expect(fresh.states() == h.engine.states(), "step \(step)")
        for group in h.engine.groupIDs {
          #expect(try fresh.currentTip(ofGroup: group) == h.engine.currentTip(ofGroup: group), "step \(step)")
        }
        #expect(fresh.nextChangeTime() == h.engine.nextChangeTime(), "step \(step)")
      }
    }
    #expect(h.allChanges.count > 100)
  }
}
