public import TipsJSON

/// TipKit's eligibility engine: registered tips, their rules, events, parameters, groups, display frequency and
/// testing overrides, evaluated incrementally.
///
/// Not thread-safe: an engine has one owner (the server's loop thread), which makes every call. It does no I/O and
/// reads time only from its injected ``clock``. Every mutation returns a ``Mutation``: the ``Change``s to notify
/// (a tip is reported only when its `(status, shouldDisplay)` differs from its last report; a newly registered tip
/// is reported once; group current-tip changes are reported) and the ``StateWrite``s that persist it — applying
/// every write in order to an empty store and loading it reproduces ``snapshot()``.
///
/// Incremental evaluation: an index from event id and parameter id to dependent tips means a donation or a
/// parameter change re-evaluates only the tips that read it (and the groups holding them); a donation, only those of
/// them it can still change (`Engine+Saturation`: a count that already holds, or fails, for good is not read again
/// while nothing time-driven is pending). Plain counts are O(1), `within` counts O(log n). Time-driven changes (a
/// donation leaving a `within` window, a cooldown ending) are applied by ``advanceTimeInSteps()``, which steps to
/// each instant ``nextChangeTime()`` announces and settles there (one mutation per instant, stamped with it), on
/// every clock; other mutations do not look for them.
///
/// Cooldown: a tip is *cooldown-sensitive* when it is not invalidated, its rules hold, its schedule is open, it was
/// never displayed and it does not ignore display frequency. Only those tips can change when the cooldown starts or
/// ends, so the engine keeps them in a set and touches only them.
///
/// Beyond TipKit (each decision in `tipkit-semantics.md` terms in the README):
/// - **Schedules** (`TipSchedule`, on a tip or a group) open and close with time: a closed tip is pending, a closed
///   group has no current tip.
/// - **Suppression** (``suppress(seconds:reason:)``): no tip displays while it runs; it ends by itself.
/// - **Tips that follow tips** (``TipRule``): a rule reads another tip's record; `for` makes it time-driven. An index
///   from tip id to the tips whose rules read it re-evaluates them when its record changes; cycles are refused.
/// - **Donation ages** (``setDonationMaxAge(_:_:)``): a donation older than its event's maximum age is invisible to
///   every rule and is trimmed from the log (and the store, by a `.trimDonations` write).
/// - **Holdouts** (a variant with `holdout`): the install never displays the tip; the instant it would have become
///   displayable opens a *counterfactual exposure* (durable, so a restart does not count it again), written as
///   `.exposure` for the lifecycle history.
public final class Engine {
  /// Where "now" comes from.
  public let clock: any EngineClock
  public let configuration: EngineConfiguration

  // The properties a donation's path reads and changes many times are `@exclusivity(unchecked)`, as the engine's
  // hottest are: the runtime's access checks were 7 % of a hosted donation's instructions (#47). Only the loop's
  // thread touches them, and no access to one stays open across a call that could reach it again.
  // Tips
  var slots: [TipSlot?] = []
  /// `slots` again, unretained, for the hot loops of `settle` (the slots array owns them).
  @exclusivity(unchecked) var slotRefs: [Unmanaged<TipSlot>?] = []
  @exclusivity(unchecked) var slotIndex: [String: Int] = [:]
  /// Durable records of tips that are not registered (restored before registration, or unregistered).
  var orphanRecords: [String: TipRecord] = [:]
  /// The variant each tip with variants shows (see `Engine+Variants`), and the install id they are hashed from.
  var variantAssignments: [String: String] = [:]
  var installID: String?

  // Events and parameters
  @exclusivity(unchecked) var logs: [String: EventLog] = [:]
  @exclusivity(unchecked) var logList: [EventLog] = []
  /// Donations stored over `logList`, kept by the logs as they change (``storedDonationCount``).
  let donationTally = DonationTally()
  /// The log ``eventLog(_:)`` returned last: donations come in runs of one event, and comparing two ids costs far
  /// less than hashing one. Never stale: an id's log, once made, is never replaced or removed.
  @exclusivity(unchecked) private var lastLog: EventLog?
  var parameters: [String: ParameterSlot] = [:]
  @exclusivity(unchecked) var windows: [WindowKey: WindowWatch] = [:]

  // Groups
  @exclusivity(unchecked) var groups: [String: GroupState] = [:]
  var groupsByTip: [String: [String]] = [:]
  var nextGroupPosition = 0

  // Display frequency
  var frequency: DisplayFrequency = .immediate
  var cooldownStartedAt: Timestamp?
  /// Whether the cooldown was gating when the sensitive tips were last brought up to date.
  var cooldownGate = false
  @exclusivity(unchecked) var sensitive: Set<Int> = []

  // Testing overrides
  var showAll = false { didSet { updateOverridesActive() } }
  var hideAll = false { didSet { updateOverridesActive() } }
  var showIDs: Set<String> = [] { didSet { updateOverridesActive() } }
  var hideIDs: Set<String> = [] { didSet { updateOverridesActive() } }
  /// Whether any override is set, cached: checked for every tip evaluated.
  @exclusivity(unchecked) var hasOverrides = false
  @exclusivity(unchecked) var epochCounter = 0

  // Schedules and donation ages: the slots with a schedule and the logs with a maximum age, so that time-driven
  // work costs nothing per tip or event without them.
  @exclusivity(unchecked) var scheduledSlots: Set<Int> = []
  @exclusivity(unchecked) var agedLogs: [EventLog] = []

  // Tips that follow tips: the tips whose rules read each tip's record, and each `for` watch's last value.
  var tipDependents: [String: [Int]] = [:]
  @exclusivity(unchecked) var followWatches: [FollowKey: Bool] = [:]

  // Suppression and holdouts
  @exclusivity(unchecked) var suppression: Suppression?
  /// `suppression` is in force (cached: read for every tip evaluated).
  @exclusivity(unchecked) var suppressionActive = false
  /// Open counterfactual exposures by record key, with the instant each began.
  var exposures: [String: Timestamp] = [:]
  /// Slots showing a holdout or with an exposure open (whose counterfactual their groups' changes can move).
  var holdoutSlots: Set<Int> = []

  // Time bookkeeping
  @exclusivity(unchecked) var lastNow: Timestamp = -.infinity
  /// The instant the current mutation read from the clock.
  @exclusivity(unchecked) var mutationNow: Timestamp = -.infinity
  /// Before this instant every cached evaluation is fresh: nothing time-driven is pending (see `Engine+Saturation`).
  @exclusivity(unchecked) var currentUntil: Timestamp = -.infinity
  /// Bumped by every mutation other than a donation: an event's live set made under another value is stale.
  @exclusivity(unchecked) var liveEpoch = 1
  var timeWentBack = false
  /// The instant through which time-driven changes are applied: ``advanceTimeInSteps()`` steps from here to each
  /// later instant ``nextChangeTime()`` announces.
  @exclusivity(unchecked) var timeSettled: Timestamp
  /// Changes found by `restore`, delivered with the next mutation.
  @exclusivity(unchecked) var deferredChanges: [Change] = []
  /// Writes found by `restore` (aged donations trimmed, exposures closed), delivered first with the next mutation.
  var deferredWrites: [StateWrite] = []
  /// Writes a settle pass caused (exposures opened or closed), delivered last with the mutation that caused them.
  @exclusivity(unchecked) var pendingWrites: [StateWrite] = []

  public init(clock: any EngineClock, configuration: EngineConfiguration = .init()) {
    self.clock = clock
    self.configuration = configuration
    timeSettled = clock.now()
  }

  // MARK: - Durable state

  /// Replaces the durable state with a snapshot loaded from the store: at start, before registrations, and by the
  /// server after a failed commit (registrations, groups, overrides and transient parameters are not durable and
  /// stay). Changes it causes to already registered tips are delivered with the next mutation.
  public func restore(_ snapshot: EngineSnapshot) {
    let now = tick()
    for log in logList {
      log.removeAll()
      log.limit = nil
      log.maxAge = nil
    }
    agedLogs = []
    for (id, limit) in snapshot.donationLimits { eventLog(id).limit = max(1, limit) }
    for (id, seconds) in snapshot.donationMaxAges.sorted(by: { $0.key < $1.key }) where seconds.isFinite && seconds > 0
    {
      let log = eventLog(id)
      log.maxAge = seconds
      agedLogs.append(log)
    }
    for (id, donations) in snapshot.donations {
      let log = eventLog(id)
      log.replace(with: donations, lifetime: snapshot.lifetimeCounts[id] ?? donations.count, limit: limit(of: log))
    }
    for (id, lifetime) in snapshot.lifetimeCounts where snapshot.donations[id] == nil {
      let log = eventLog(id)
      log.replace(with: [], lifetime: lifetime, limit: limit(of: log))
    }
    for parameter in parameters.values where parameter.isPersisted { parameter.stored = nil }
    for (id, value) in snapshot.parameters {
      let parameter = parameterSlot(id)
      if parameter.isPersisted { parameter.stored = value }
    }
    installID = snapshot.installID
    variantAssignments = snapshot.variantAssignments
    orphanRecords = snapshot.tipRecords.filter { !$0.value.isEmpty }
    exposures = snapshot.exposures
    for case let slot? in slots {
      let (variant, _) = resolveVariant(slot.definition)
      if variant != slot.variant { slot.reported = nil }
      slot.variant = variant
      slot.recordKey = Self.recordKey(tipID: slot.id, variant: variant)
      slot.record = orphanRecords.removeValue(forKey: slot.recordKey) ?? TipRecord()
      refreshVariantFlags(slot)
    }
    cooldownStartedAt = snapshot.cooldownStartedAt
    frequency = snapshot.displayFrequency
    suppression = snapshot.suppression
    if let ended = suppression, !ended.isActive(at: now) {
      suppression = nil
      pendingWrites.append(.suppression(nil))
    }
    for log in agedLogs where log.trimAged(now: now) {
      pendingWrites.append(.trimDonations(eventID: log.id, keepNewest: log.count))
    }
    deferredChanges += settleEverything(now: now)
    deferredWrites += pendingWrites
    pendingWrites = []
    refreshCurrentUntil(everything: true)
  }

  /// The current durable state, as the store would load it.
  public func snapshot() -> EngineSnapshot {
    var snapshot = EngineSnapshot(cooldownStartedAt: cooldownStartedAt, displayFrequency: frequency)
    for log in logList {
      if log.count > 0 { snapshot.donations[log.id] = log.donations }
      if log.lifetime > log.count { snapshot.lifetimeCounts[log.id] = log.lifetime }
      if let limit = log.limit { snapshot.donationLimits[log.id] = limit }
      if let maxAge = log.maxAge { snapshot.donationMaxAges[log.id] = maxAge }
    }
    for parameter in parameters.values where parameter.isPersisted {
      if let value = parameter.stored { snapshot.parameters[parameter.id] = value }
    }
    snapshot.tipRecords = orphanRecords
    for case let slot? in slots where !slot.record.isEmpty { snapshot.tipRecords[slot.recordKey] = slot.record }
    snapshot.variantAssignments = variantAssignments
    snapshot.installID = installID
    snapshot.suppression = suppression
    snapshot.exposures = exposures
    return snapshot
  }

  // MARK: - Tips

  /// Registers tips; a registered id has its definition replaced and keeps its state. A new tip is always
  /// reported once. Tips that follow tips must not form a cycle (with each other or with registered tips): such a
  /// batch is refused whole, naming the first tip of the cycle in it.
  public func register(_ tips: [TipDefinition]) throws(EngineError) -> Mutation {
    try checkFollowCycles(tips)
    let now = tick()
    var touched: [Int] = []
    var writes: [StateWrite] = []
    for definition in tips {
      let slot: TipSlot
      let (variant, write) = resolveVariant(definition)
      if let write { writes.append(write) }
      if let existing = self.slot(definition.id) {
        slot = existing
        detach(slot)
        slot.setDefinition(configuration.definitionShelf?.box(definition) ?? DefinitionBox(definition))
        if variant != slot.variant {
          switchVariant(slot, to: variant)
          slot.reported = nil
        }
      } else {
        let key = Self.recordKey(tipID: definition.id, variant: variant)
        let record = orphanRecords.removeValue(forKey: key) ?? TipRecord()
        let box = configuration.definitionShelf?.box(definition) ?? DefinitionBox(definition)
        slot = TipSlot(index: slots.count, definition: box, record: record)
        slot.variant = variant
        slot.recordKey = key
        slots.append(slot)
        slotRefs.append(.passUnretained(slot))
        slotIndex[definition.id] = slot.index
        slot.groups = groupsByTip[definition.id] ?? []
      }
      refreshVariantFlags(slot)
      attach(slot, now: now)
      if definition.schedule != nil { scheduledSlots.insert(slot.index) } else { scheduledSlots.remove(slot.index) }
      touched.append(slot.index)
    }
    for definition in tips { touched += followers(of: definition.id, now: now) }
    return finish(settle(rules: touched, now: now), writes: writes)
  }

  /// Refuses a batch whose tips, with the registered ones it does not replace, follow each other in a cycle.
  func checkFollowCycles(_ tips: [TipDefinition]) throws(EngineError) {
    var edges: [String: [String]] = [:]
    for case let slot? in slots { edges[slot.id] = slot.definition.followedTips }
    var batch: [String: Int] = [:]
    for (index, tip) in tips.enumerated() {
      edges[tip.id] = tip.followedTips
      batch[tip.id] = index
    }
    guard edges.values.contains(where: { !$0.isEmpty }) else { return }
    var done: Set<String> = []
    for tip in tips {
      guard let cycle = Self.followCycle(from: tip.id, edges: edges, done: &done) else { continue }
      let first = cycle.first { batch[$0] != nil } ?? tip.id
      throw .invalidDefinition(
        path: "tips[\(batch[first] ?? 0)].rules",
        message: "tips that follow tips form a cycle (\(cycle.joined(separator: " → "))): none of them could ever show")
    }
  }

  /// A cycle reachable from `start` among tips that follow tips (`edges`: each tip's followed tips), as the tips
  /// along it with the first repeated at the end (`a → b → a`); nil when there is none. Depth first; `done` collects
  /// the tips known to lead to no cycle, so that several starts share the work. What `tipsd lint` reports too.
  public static func followCycle(from start: String, edges: [String: [String]], done: inout Set<String>) -> [String]? {
    var path: [String] = []
    var onPath: Set<String> = []
    func visit(_ id: String) -> [String]? {
      if onPath.contains(id) { return Array(path[path.firstIndex(of: id)!...]) + [id] }
      guard !done.contains(id) else { return nil }
      path.append(id)
      onPath.insert(id)
      for next in edges[id] ?? [] {
        if let cycle = visit(next) { return cycle }
      }
      path.removeLast()
      onPath.remove(id)
      done.insert(id)
      return nil
    }
    return visit(start)
  }

  /// Unregisters tips (unknown ids are ignored). A tip whose last report said `shouldDisplay: true` is reported
  /// once more with `shouldDisplay: false`. Records stay in the store.
  public func unregister(_ ids: [String]) -> Mutation {
    let now = tick()
    var changes: [Change] = []
    var affectedGroups: [String] = []
    var rules: [Int] = []
    for id in ids {
      guard let slot = slot(id) else { continue }
      detach(slot)
      if slot.reported?.shouldDisplay == true {
        changes.append(.tip(TipState(id: id, status: slot.status, shouldDisplay: false, variant: slot.variant)))
      }
      if !slot.record.isEmpty { orphanRecords[slot.recordKey] = slot.record }
      if slot.sensitive { sensitive.remove(slot.index) }
      scheduledSlots.remove(slot.index)
      holdoutSlots.remove(slot.index)
      slots[slot.index] = nil
      slotRefs[slot.index] = nil
      slotIndex[id] = nil
      affectedGroups += slot.groups
      rules += followers(of: id, now: now)
    }
    changes += settle(rules: rules, groups: affectedGroups, now: now)
    return finish(changes)
  }

  /// Registered tip ids in registration order.
  public var registeredTipIDs: [String] { slots.compactMap { $0?.id } }

  /// A registered tip's definition.
  public func definition(of tipID: String) -> TipDefinition? { slot(tipID)?.definition }

  /// A tip's durable record (empty when it has none), registered or not.
  public func record(of tipID: String) -> TipRecord {
    slot(tipID)?.record ?? orphanRecords[Self.recordKey(tipID: tipID, variant: variantAssignments[tipID])]
      ?? TipRecord()
  }

  /// A registered tip's current state.
  public func state(of tipID: String) -> TipState? { slot(tipID)?.state }

  /// States of the given tips (unknown ids skipped), or of every registered tip in registration order.
  public func states(_ ids: [String]? = nil) -> [TipState] {
    guard let ids else { return slots.compactMap { $0?.state } }
    return ids.compactMap { slot($0)?.state }
  }

  /// Invalidates a tip. An already invalidated tip keeps its first reason and nothing changes.
  public func invalidate(_ tipID: String, reason: InvalidationReason) throws(EngineError) -> Mutation {
    guard let slot = slot(tipID) else { throw .unknownTip(tipID) }
    let now = tick()
    guard slot.record.invalidationReason == nil else { return finish([]) }
    slot.record.invalidationReason = reason
    slot.record.invalidatedAt = now
    return finish(
      settle(rules: followers(of: tipID, now: now), state: [slot.index], now: now),
      writes: [.tipRecord(id: slot.recordKey, slot.record)])
  }

  /// iOS 26's `resetEligibility()`: clears the tip's invalidation and its display history (count, duration,
  /// first/last display), so its budgets start afresh. Donations are untouched.
  public func resetEligibility(_ tipID: String) throws(EngineError) -> Mutation {
    guard let slot = slot(tipID) else { throw .unknownTip(tipID) }
    let now = tick()
    guard !slot.record.isEmpty else { return finish([]) }
    slot.record = TipRecord()
    return finish(
      settle(rules: followers(of: tipID, now: now), state: [slot.index], now: now),
      writes: [.tipRecord(id: slot.recordKey, slot.record)])
  }

  /// Records an impression reported by a frontend that draws its own UI: increments the display count, adds the
  /// duration, stamps first/last display and restarts the cooldown (unless the tip ignores display frequency).
  /// Then, if the tip is not already invalidated, checks its budgets: count first, then duration.
  public func recordDisplay(_ tipID: String, duration: Double = 0) throws(EngineError) -> Mutation {
    guard let slot = slot(tipID) else { throw .unknownTip(tipID) }
    guard duration.isFinite, duration >= 0 else {
      throw .invalidArgument(argument: "duration", problem: "must be a non-negative number of seconds")
    }
    let now = tick()
    var record = slot.record
    record.displayCount += 1
    record.displayedDuration += duration
    if record.firstDisplayedAt == nil { record.firstDisplayedAt = now }
    record.lastDisplayedAt = now
    if record.invalidationReason == nil {
      let options = slot.definition.options
      if let maxCount = options.maxDisplayCount, record.displayCount >= maxCount {
        record.invalidationReason = .displayCountExceeded
        record.invalidatedAt = now
      } else if let maxDuration = options.maxDisplayDuration, record.displayedDuration >= maxDuration {
        record.invalidationReason = .displayDurationExceeded
        record.invalidatedAt = now
      }
    }
    slot.record = record
    var writes: [StateWrite] = [.tipRecord(id: slot.recordKey, record)]
    var state = [slot.index]
    if !slot.ignoresFrequency {
      let before = cooldownActive(now)
      cooldownStartedAt = now
      writes.append(.cooldown(now))
      state += cooldownGateChanged(before: before, now: now)
    }
    return finish(settle(rules: followers(of: tipID, now: now), state: state, now: now), writes: writes)
  }

  // MARK: - Reset

  /// Datastore reset: clears donations (and lifetime counts), parameter values (back to their defaults), tip records,
  /// counterfactual exposures and the cooldown. Definitions, display frequency, donation limits and ages, the install
  /// id, variant assignments, a suppression and testing overrides stay; they are written again after the `.reset`
  /// write.
  public func reset() -> Mutation {
    let now = tick()
    for log in logList { log.removeAll() }
    for parameter in parameters.values { parameter.stored = nil }
    for case let slot? in slots {
      slot.record = TipRecord()
      slot.exposed = false
    }
    orphanRecords = [:]
    exposures = [:]
    cooldownStartedAt = nil
    var writes: [StateWrite] = [.reset, .displayFrequency(frequency)]
    for log in logList.sorted(by: { $0.id < $1.id }) {
      if let limit = log.limit { writes.append(.donationLimit(eventID: log.id, limit: limit)) }
      if let maxAge = log.maxAge { writes.append(.donationMaxAge(eventID: log.id, seconds: maxAge)) }
    }
    if let suppression { writes.append(.suppression(suppression)) }
    if let installID { writes.append(.installID(installID)) }
    for (tipID, variant) in variantAssignments.sorted(by: { $0.key < $1.key }) {
      writes.append(.variantAssignment(tipID: tipID, variant: variant))
    }
    return finish(settleEverything(now: now), writes: writes, everything: true)
  }

  // MARK: - Internals: lookups

  func slot(_ id: String) -> TipSlot? {
    guard let index = slotIndex[id] else { return nil }
    return slots[index]
  }

  func eventLog(_ id: String) -> EventLog {
    if let lastLog, lastLog.id == id { return lastLog }
    if let log = logs[id] {
      lastLog = log
      return log
    }
    let log = EventLog(id: id, number: logList.count, tally: donationTally)
    logs[id] = log
    logList.append(log)
    lastLog = log
    return log
  }

  func parameterSlot(_ id: String) -> ParameterSlot {
    if let parameter = parameters[id] { return parameter }
    let parameter = ParameterSlot(id: id)
    parameters[id] = parameter
    return parameter
  }

  func limit(of log: EventLog) -> Int { log.limit ?? configuration.defaultDonationLimit }

  /// Reads the clock for a mutation and notes a clock that went backwards.
  func tick() -> Timestamp {
    let now = clock.now()
    if now < lastNow { timeWentBack = true }
    lastNow = max(lastNow, now)
    mutationNow = now
    return now
  }

  /// Prepends changes and writes deferred by `restore`; appends the writes the settle pass caused. A mutation other
  /// than a donation (`donation`) makes every live set stale and recomputes ``currentUntil`` (`everything`: it
  /// re-evaluated every tip and group at `mutationNow`).
  func finish(_ changes: [Change], writes: [StateWrite] = [], donation: Bool = false, everything: Bool = false)
    -> Mutation
  {
    if !donation { refreshCurrentUntil(everything: everything) }
    var writes = writes
    if !deferredWrites.isEmpty {
      writes = deferredWrites + writes
      deferredWrites = []
    }
    if !pendingWrites.isEmpty {
      writes += pendingWrites
      pendingWrites = []
    }
    if deferredChanges.isEmpty { return Mutation(changes: changes, writes: writes) }
    let all = deferredChanges + changes
    deferredChanges = []
    return Mutation(changes: all, writes: writes)
  }

}
