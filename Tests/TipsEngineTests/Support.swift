import Testing
import TipsEngine
import TipsJSON

/// A fixed start instant for every test clock.
let t0: Timestamp = 1_700_000_000

/// Parses JSON text (test inputs are always valid JSON).
func json(_ text: String) -> JSONValue {
  do { return try JSONParser.parse(text) } catch { fatalError("bad test JSON: \(error) in \(text)") }
}

/// Decodes a tip definition from JSON text.
func tip(_ text: String) throws -> TipDefinition {
  try TipDefinition(json: json(text), path: "tip")
}

/// Decodes a rule from JSON text.
func rule(_ text: String) throws -> Rule {
  try Rule(json: json(text), path: "rule")
}

/// The error message a decoding attempt produces, or nil when it succeeds.
func decodingError(_ text: String, path: String = "tips[2]") -> String? {
  do {
    _ = try TipDefinition(json: json(text), path: path)
    return nil
  } catch {
    return error.description
  }
}

/// A model of the datastore: applies ``StateWrite``s exactly as documented and loads them back as a snapshot.
struct FakeStore {
  var snapshot = EngineSnapshot()

  mutating func apply(_ write: StateWrite) {
    switch write {
    case .donation(let eventID, let donation, let keepNewest):
      var list = snapshot.donations[eventID] ?? []
      // A snapshot lists a lifetime count only when it exceeds what is kept.
      let lifetime = (snapshot.lifetimeCounts[eventID] ?? list.count) + 1
      list.append(donation)
      if list.count > keepNewest { list.removeFirst(list.count - keepNewest) }
      snapshot.donations[eventID] = list
      snapshot.lifetimeCounts[eventID] = lifetime > list.count ? lifetime : nil
    case .variantAssignment(let tipID, let variant):
      snapshot.variantAssignments[tipID] = variant
    case .installID(let id):
      snapshot.installID = id
    case .parameter(let id, let value):
      snapshot.parameters[id] = value
    case .deleteParameter(let id):
      snapshot.parameters[id] = nil
    case .tipRecord(let id, let record):
      snapshot.tipRecords[id] = record.isEmpty ? nil : record
    case .cooldown(let instant):
      snapshot.cooldownStartedAt = instant
    case .displayFrequency(let frequency):
      snapshot.displayFrequency = frequency
    case .donationLimit(let eventID, let limit):
      snapshot.donationLimits[eventID] = limit
      if var list = snapshot.donations[eventID], list.count > limit {
        snapshot.lifetimeCounts[eventID] = snapshot.lifetimeCounts[eventID] ?? list.count
        list.removeFirst(list.count - limit)
        snapshot.donations[eventID] = list
      }
    case .reset:
      snapshot = EngineSnapshot()
    case .donations(let eventID, let list, let lifetime):
      snapshot.donations[eventID] = list.isEmpty ? nil : list
      snapshot.lifetimeCounts[eventID] = lifetime > list.count ? lifetime : nil
    case .lifetime(let eventID, let lifetime):
      let kept = snapshot.donations[eventID]?.count ?? 0
      snapshot.lifetimeCounts[eventID] = lifetime > kept ? lifetime : nil
    case .donationMaxAge(let eventID, let seconds):
      snapshot.donationMaxAges[eventID] = seconds
    case .trimDonations(let eventID, let keepNewest):
      guard var list = snapshot.donations[eventID], list.count > keepNewest else { return }
      snapshot.lifetimeCounts[eventID] = snapshot.lifetimeCounts[eventID] ?? list.count
      list.removeFirst(list.count - keepNewest)
      snapshot.donations[eventID] = list.isEmpty ? nil : list
    case .suppression(let suppression):
      snapshot.suppression = suppression
    case .exposure(let tipID, let variant, let since):
      snapshot.exposures[Engine.recordKey(tipID: tipID, variant: variant)] = since
    }
  }

  static func replaying(_ writes: [StateWrite]) -> EngineSnapshot {
    var store = FakeStore()
    for write in writes { store.apply(write) }
    return store.snapshot
  }
}

/// An engine on a virtual clock, with a subscriber that checks every mutation: no tip is reported twice in a row
/// with the same state, the subscriber's view always matches the engine, and replaying every write into a fresh
/// store reproduces `snapshot()`.
final class Harness {
  let clock: VirtualClock
  let engine: Engine
  /// Every write so far (the store's log).
  var writes: [StateWrite] = []
  /// What a subscriber believes: the last reported state per tip and current tip per group.
  var view: [String: TipState] = [:]
  var groupView: [String: String?] = [:]
  /// The changes of the last mutation.
  var last: [Change] = []
  /// Every change so far.
  var allChanges: [Change] = []
  /// Check replay after every mutation (switched off by very large tests).
  var checkReplay = true

  init(now: Timestamp = t0, configuration: EngineConfiguration = .init(), snapshot: EngineSnapshot? = nil) {
    clock = VirtualClock(now: now)
    engine = Engine(clock: clock, configuration: configuration)
    if let snapshot {
      engine.restore(snapshot)
      writes = Self.writes(reproducing: snapshot)
    }
  }

  /// Writes that load back as `snapshot` (to seed the replay log of a restored engine).
  static func writes(reproducing snapshot: EngineSnapshot) -> [StateWrite] {
    var writes: [StateWrite] = [.displayFrequency(snapshot.displayFrequency)]
    for (id, limit) in snapshot.donationLimits { writes.append(.donationLimit(eventID: id, limit: limit)) }
    for (id, list) in snapshot.donations {
      // Donations trimmed away before the kept ones, so that the lifetime count replays too.
      let dropped = (snapshot.lifetimeCounts[id] ?? list.count) - list.count
      for _ in 0..<max(0, dropped) { writes.append(.donation(eventID: id, Donation(at: 0), keepNewest: Int.max)) }
      for donation in list {
        writes.append(.donation(eventID: id, donation, keepNewest: dropped > 0 ? list.count : Int.max))
      }
    }
    if let installID = snapshot.installID { writes.append(.installID(installID)) }
    for (tipID, variant) in snapshot.variantAssignments {
      writes.append(.variantAssignment(tipID: tipID, variant: variant))
    }
    for (id, value) in snapshot.parameters { writes.append(.parameter(id: id, value: value)) }
    for (id, record) in snapshot.tipRecords { writes.append(.tipRecord(id: id, record)) }
    writes.append(.cooldown(snapshot.cooldownStartedAt))
    for (id, seconds) in snapshot.donationMaxAges { writes.append(.donationMaxAge(eventID: id, seconds: seconds)) }
    if let suppression = snapshot.suppression { writes.append(.suppression(suppression)) }
    for (key, since) in snapshot.exposures {
      let tipID = Engine.tipID(ofRecordKey: key)
      writes.append(.exposure(tipID: tipID, variant: String(key.dropFirst(tipID.count + 1)), since: since))
    }
    return writes
  }

  /// Records a mutation and checks the invariants.
  @discardableResult
  func apply(_ mutation: Mutation, sourceLocation: SourceLocation = #_sourceLocation) -> [Change] {
    last = mutation.changes
    allChanges += mutation.changes
    writes += mutation.writes
    for change in mutation.changes {
      switch change {
      case .tip(let state):
        #expect(view[state.id] != state, "duplicate report of \(state)", sourceLocation: sourceLocation)
        view[state.id] = state
      case .groupCurrentTip(let group, let tipID):
        if let known = groupView[group] {
          #expect(known != tipID, "duplicate group report \(group)", sourceLocation: sourceLocation)
        }
        groupView[group] = tipID
      }
    }
    // An unregistered tip or group is forgotten: registering it again is a new registration, reported afresh.
    for id in view.keys where engine.state(of: id) == nil { view[id] = nil }
    for id in groupView.keys where engine.group(id) == nil { groupView[id] = nil }
    for state in engine.states() {
      #expect(view[state.id] == state, "subscriber view out of date for \(state.id)", sourceLocation: sourceLocation)
    }
    for group in engine.groupIDs {
      let current = try? engine.currentTip(ofGroup: group)
      #expect(groupView[group] == .some(current ?? nil), "group view of \(group)", sourceLocation: sourceLocation)
    }
    if checkReplay {
      #expect(
        FakeStore.replaying(writes) == engine.snapshot(), "writes do not replay to the snapshot",
        sourceLocation: sourceLocation)
    }
    return mutation.changes
  }

  // MARK: Shorthands

  @discardableResult
  func register(_ texts: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> [Change] {
    apply(try engine.register(try texts.map(tip)), sourceLocation: sourceLocation)
  }

  @discardableResult
  func donate(_ event: String, _ info: JSONObject? = nil, sourceLocation: SourceLocation = #_sourceLocation)
    -> [Change]
  {
    do {
      return apply(try engine.donate(event, info: info).mutation, sourceLocation: sourceLocation)
    } catch {
      Issue.record("donate(\(event)) failed: \(error)", sourceLocation: sourceLocation)
      return []
    }
  }

  @discardableResult
  func donate(_ event: String, times: Int, sourceLocation: SourceLocation = #_sourceLocation) -> [Change] {
    var changes: [Change] = []
    for _ in 0..<times { changes += donate(event, sourceLocation: sourceLocation) }
    return changes
  }

  @discardableResult
  func advance(_ seconds: Double, sourceLocation: SourceLocation = #_sourceLocation) -> [Change] {
    clock.advance(by: seconds)
    return apply(engine.advanceTime(), sourceLocation: sourceLocation)
  }

  func state(_ id: String) -> TipState? { engine.state(of: id) }
  func shows(_ id: String) -> Bool { engine.state(of: id)?.shouldDisplay ?? false }
  func status(_ id: String) -> TipStatus? { engine.state(of: id)?.status }

  /// The tip changes of the last mutation.
  var lastTipChanges: [TipState] {
    last.compactMap { if case .tip(let state) = $0 { state } else { nil } }
  }

  /// The group changes of the last mutation.
  var lastGroupChanges: [String: String?] {
    var result: [String: String?] = [:]
    for case .groupCurrentTip(let group, let tipID) in last { result[group] = tipID }
    return result
  }
}
