public import TipsEngine
package import TipsJSON
public import TipsRecords

/// What a sync step asks of the server: engine mutations to record (notify subscribers, persist), in order, and the
/// sync layer's own writes for the same transaction.
public struct SyncEffects: Sendable {
  public var mutations: [Mutation] = []
  /// The writes that mirror the step in the device's datastore (``write(_:)``).
  public private(set) var writes: [SyncWrite] = []
  /// Whether writes are kept: not for a hosted account's model (``SyncModel/Role/hosted``), whose state is
  /// PostgreSQL's (its operations go there from the outbox, its state as snapshots) — building them cost a hosted
  /// donation a few thousand instructions, and they were thrown away (#47).
  package let keepsWrites: Bool

  public init() { keepsWrites = true }

  package init(keepsWrites: Bool) { self.keepsWrites = keepsWrites }

  public var isEmpty: Bool { mutations.isEmpty && writes.isEmpty }

  /// Adds a write, unless writes are not kept (then `write` is not even built).
  @inline(__always)
  package mutating func write(_ write: @autoclosure () -> SyncWrite) {
    if keepsWrites { writes.append(write()) }
  }
}

/// The merge model: what every device of the account contributed, and the merged value of each synced piece of state,
/// kept equal to the engine's. Pure — no I/O, time from the engine's clock — and single-threaded (the loop's).
///
/// Merge rules (they converge whatever order operations arrive in, because each merged value is a function of the
/// *set* of operations received):
/// - **Epochs.** `datastore/reset` starts a new epoch (its HLC) on every device; every operation names the epoch its
///   device knew, and operations of an older epoch than the newest reset are void.
/// - **Donations**: a union keyed by (device, seq) (PostgreSQL's key); each event's history is the newest
///   `maxDonations` of the union in ``Donation/precedes(_:_:canonical:)`` order; its lifetime count is the sum over devices of
///   each device's own cumulative count.
/// - **Display count, duration, first/last display**: per-device cumulative counters, summed (first: the earliest,
///   last: the latest) over the counters of the record's current eligibility generation.
/// - **Invalidation**: sticky; the earliest (HLC, then device) of the invalidations newer than the record's last
///   `resetEligibility` wins. A `resetEligibility` voids the invalidations older than it and starts a new generation:
///   the display counters of older generations count as zero (a device restarts its own when it learns of it).
/// - **Parameters**: last writer wins, by HLC, then device id.
/// - Tips whose definition says `"sync": "local"` are neither sent nor merged; definitions, groups, display
///   frequency (and its cooldown), donation limits and ages, variants and install ids are each device's own.
/// - **Hosted accounts** (``Role/hosted``: a tipsd node serving the account, whose state lives in PostgreSQL only)
///   also replicate what a device keeps as its own: each tip's variant assignment (last writer wins, by HLC then
///   device id) and the display-frequency cooldown (the latest start wins). Devices skip those operations.
/// - Beyond TipKit (#25): a suppression (`tips/suppress`, about this device's screen) and counterfactual exposures
///   (what this device would have displayed) are the device's own and send nothing. Holdout assignments need no
///   operation: with sync the engine assigns a tip with a holdout from the account (`EngineConfiguration
///   .holdoutAccount`), so every device of it is held out, or none. Follow-on rules read records, which sync.
public final class SyncModel {
  /// Whose model this is: a device daemon (`--sync`) or a hosted node serving the account.
  public enum Role: Sendable { case device, hosted }

  public let device: String
  public let account: String
  public let role: Role
  public let engine: Engine
  /// Operations beyond this many queued make synced changes refused (``isOutboxFull``).
  public let outboxLimit: Int
  /// Whether a record key's tip syncs (false for a definition with `"sync": "local"`).
  public var isSynced: (String) -> Bool

  // The properties a donation's path reads and changes many times are `@exclusivity(unchecked)`, as the engine's
  // hottest are: the runtime's access checks were 7 % of a hosted donation's instructions (#47). Only the loop's
  // thread touches them, and no access to one stays open across a call that could reach it again.
  @exclusivity(unchecked) public internal(set) var epoch: HLC = .zero
  @exclusivity(unchecked) public package(set) var clock = HybridClock()
  /// The first sequence number of this datastore's life as `device`: this device's operations from before it (a
  /// datastore replaced under the same `--device`) are merged like another device's; later ones were applied here.
  public package(set) var since: Int64 = 0
  /// The last `tipsd.ops` cursor applied.
  @exclusivity(unchecked) public package(set) var cursor: Int64 = 0

  package struct DisplayCounter: Equatable {
    var generation: HLC
    var count: Int
    var duration: Double
    var first: Double?
    var last: Double?
    var seq: Int64
  }

  package struct Invalidation: Equatable {
    var hlc: HLC
    var device: String
    var reason: InvalidationReason
    var at: Double

    func precedes(_ other: Invalidation) -> Bool {
      hlc != other.hlc ? hlc < other.hlc : device.utf8.lexicographicallyPrecedes(other.device.utf8)
    }
  }

  package struct ParameterRegister: Equatable {
    var hlc: HLC
    var device: String
    package var value: JSONValue

    func isNewer(than other: ParameterRegister) -> Bool {
      hlc != other.hlc ? hlc > other.hlc : other.device.utf8.lexicographicallyPrecedes(device.utf8)
    }
  }

  /// Per event, per device: cumulative donations in this epoch.
  @exclusivity(unchecked) package var lifetimes: [String: PerDevice<Int>] = [:]
  /// Per record key, per device: display counter.
  package var displays: [String: PerDevice<DisplayCounter>] = [:]
  /// Per record key: the newest resetEligibility.
  package var eligibility: [String: HLC] = [:]
  /// Per record key: invalidations newer than its eligibility reset, earliest first.
  package var invalidations: [String: [Invalidation]] = [:]
  package var parameters: [String: ParameterRegister] = [:]
  /// Hosted: per tip, its variant assignment (``ParameterRegister/value`` holds the variant's name as a string).
  package var variants: [String: ParameterRegister] = [:]
  /// Hosted: the latest cooldown start.
  package var cooldown: Double?
  /// Hosted: each held-out tip's counterfactual exposure (value `{"variant", "since"}`, `since` null once closed),
  /// last writer wins.
  package var exposures: [String: ParameterRegister] = [:]
  @exclusivity(unchecked) var outbox = Outbox()

  /// Whether merged displays that reach a record's budget invalidate it here (``applyRemote(_:cursor:wallNow:)``).
  /// Off only to compute a hosted account's snapshot, which must hold what the stored operations say and nothing a
  /// node decided on its own.
  public var checksBudgets = true

  /// Whether the datastore had never synced before (its existing state was queued as this device's contribution).
  public private(set) var bootstrapped = false
  /// Whether the clock or epoch changed since ``takeMetaWrites()``.
  @exclusivity(unchecked) var metaDirty = false

  /// Loads the model from what the datastore holds. A datastore that never synced gets `device` and `account`, and
  /// its existing state is queued as this device's contribution (``bootstrapped``). Throws a message when the
  /// datastore belongs to another account or device.
  public init(
    engine: Engine, snapshot: SyncSnapshot, account: String, device: String?, outboxLimit: Int,
    role: Role = .device, isSynced: @escaping (String) -> Bool = { _ in true }
  ) throws(SyncSetupError) {
    self.engine = engine
    self.account = account
    self.role = role
    self.outboxLimit = outboxLimit
    self.isSynced = isSynced
    let meta = snapshot.meta
    if let stored = meta[MetaKey.account], stored != account {
      throw SyncSetupError(
        "this datastore syncs account \"\(stored)\"; it cannot sync account \"\(account)\" (use another --datastore)")
    }
    if let stored = meta[MetaKey.device], let device, stored != device {
      throw SyncSetupError(
        "this datastore is device \"\(stored)\" of its account; it cannot be device \"\(device)\" (drop --device, or "
          + "use another --datastore)")
    }
    self.device = meta[MetaKey.device] ?? device ?? Self.randomDeviceID()
    epoch = HLC(rawValue: meta[MetaKey.epoch].flatMap { Int64($0) } ?? 0)
    clock = HybridClock(last: HLC(rawValue: meta[MetaKey.clock].flatMap { Int64($0) } ?? 0))
    since = meta[MetaKey.since].flatMap { Int64($0) } ?? 0
    cursor = meta[MetaKey.cursor].flatMap { Int64($0) } ?? 0
    for row in snapshot.state { load(row) }
    for row in snapshot.outbox {
      guard let operation = SyncOperation(device: self.device, seq: row.seq, payload: row.op) else { continue }
      var restored = SyncEffects(keepsWrites: false)
      outbox.add(operation, created: row.created, donationLimit: { _ in .max }, restoring: true, into: &restored)
    }
    bootstrapped = meta[MetaKey.device] == nil
  }

  /// The first effects of a datastore that never synced: its identity, and its existing state (donations, records,
  /// parameters) queued as this device's contribution. Empty otherwise.
  public func bootstrap(wallNow: Double) -> SyncEffects {
    guard bootstrapped else { return SyncEffects() }
    var effects = makeEffects()
    effects.write(.meta(key: MetaKey.device, value: device))
    effects.write(.meta(key: MetaKey.account, value: account))
    since = clock.next(physicalSeconds: engine.clock.now()).rawValue
    effects.write(.meta(key: MetaKey.since, value: String(since)))
    for event in engine.eventIDs.sorted() {
      let kept = engine.donations(event)
      let lifetime = engine.lifetimeCount(event)
      setLifetime(event, device, lifetime, &effects)
      for (index, donation) in kept.enumerated() {
        let cumulative = lifetime - (kept.count - 1 - index)
        enqueue(.donation(event: event, at: donation.at, info: donation.info, lifetime: cumulative), &effects, wallNow)
      }
    }
    for key in engine.recordKeys.sorted() where isSynced(key) {
      let record = engine.record(forKey: key)
      if record.displayCount > 0 || record.displayedDuration > 0 {
        let hlc = clock.next(physicalSeconds: engine.clock.now())
        let counter = DisplayCounter(
          generation: .zero, count: record.displayCount, duration: record.displayedDuration,
          first: record.firstDisplayedAt, last: record.lastDisplayedAt, seq: hlc.rawValue)
        setDisplay(key, device, counter, &effects)
        enqueue(
          .display(
            key: key, generation: .zero, count: counter.count, duration: counter.duration, first: counter.first,
            last: counter.last), &effects, wallNow, hlc: hlc)
      }
      if let reason = record.invalidationReason {
        addLocalInvalidation(key, reason: reason, at: record.invalidatedAt ?? engine.clock.now(), &effects, wallNow)
      }
    }
    for (id, value) in engine.storedParameters.sorted(by: { $0.key < $1.key }) {
      let hlc = clock.next(physicalSeconds: engine.clock.now())
      setParameter(id, ParameterRegister(hlc: hlc, device: device, value: value), &effects)
      enqueue(.parameter(id: id, value: value), &effects, wallNow, hlc: hlc)
    }
    bootstrapped = false
    finishMeta(&effects)
    return effects
  }

  /// A fresh device id: 128 random bits in hex.
  static func randomDeviceID() -> String {
    var generator = SystemRandomNumberGenerator()
    let hex = Array("0123456789abcdef")
    return String((0..<32).map { _ in hex[Int(generator.next() % 16)] })
  }

  // MARK: - Outbox

  /// Operations queued for PostgreSQL.
  public var outboxCount: Int { outbox.count }

  /// Whether synced changes must be refused: the outbox holds ``outboxLimit`` operations even after merging.
  public var isOutboxFull: Bool { outbox.count >= outboxLimit }

  /// When the oldest queued operation was queued (wall clock), if any.
  public var oldestQueued: Double? { outbox.oldestCreated }

  /// The oldest queued operations, at most `limit`.
  public func outboxBatch(_ limit: Int) -> [PendingOperation] {
    outbox.first(limit) { PendingOperation(seq: $0.operation.seq, payload: $0.payload) }
  }

  /// PostgreSQL committed these operations: they leave the outbox.
  public func pushed(_ seqs: [Int64]) -> SyncEffects {
    var effects = makeEffects()
    for seq in seqs { outbox.remove(seq, into: &effects) }
    return effects
  }

  // MARK: - Local changes

  /// Turns the writes of a local mutation into operations (and this device's contributions), then brings the engine
  /// to the merged value where this device's view was not the whole story (a display while another device's counts
  /// are known, an earlier invalidation elsewhere).
  public func recordLocal(_ writes: [StateWrite], wallNow: Double) -> SyncEffects {
    var effects = makeEffects()
    var touched: [String] = []
    for write in writes {
      switch write {
      case .donation(let event, let donation, _):
        let lifetime = (lifetimes[event]?[device] ?? 0) + 1
        setLifetime(event, device, lifetime, &effects)
        enqueue(
          .donation(event: event, at: donation.at, info: donation.info, lifetime: lifetime), &effects, wallNow)
      case .tipRecord(let key, let new):
        guard isSynced(key) else { continue }
        let old = projection(key)
        if new.isEmpty {
          if !old.isEmpty { localResetEligibility(key, &effects, wallNow) }
        } else {
          if new.displayCount > old.displayCount {
            localDisplay(key, old: old, new: new, &effects, wallNow)
          }
          if let reason = new.invalidationReason, old.invalidationReason == nil {
            addLocalInvalidation(key, reason: reason, at: new.invalidatedAt ?? engine.clock.now(), &effects, wallNow)
          }
        }
        touched.append(key)
      case .parameter(let id, let value):
        let hlc = clock.next(physicalSeconds: engine.clock.now())
        setParameter(id, ParameterRegister(hlc: hlc, device: device, value: value), &effects)
        enqueue(.parameter(id: id, value: value), &effects, wallNow, hlc: hlc)
      case .reset:
        let hlc = clock.next(physicalSeconds: engine.clock.now())
        startEpoch(hlc, &effects)
        enqueue(.reset, &effects, wallNow, hlc: hlc)
      case .variantAssignment(let tip, let variant?) where role == .hosted:
        guard variants[tip]?.value.stringValue != variant else { continue }
        let hlc = clock.next(physicalSeconds: engine.clock.now())
        setVariant(tip, ParameterRegister(hlc: hlc, device: device, value: .string(variant)), &effects)
        enqueue(.variant(tip: tip, variant: variant), &effects, wallNow, hlc: hlc)
      case .cooldown(let start?) where role == .hosted:
        guard let latest = cooldown, latest >= start else {
          setCooldown(start, &effects)
          enqueue(.cooldown(at: start), &effects, wallNow)
          continue
        }
        // A display on a node whose clock lags: the cooldown stays at the latest start known.
        if latest > start { effects.mutations.append(engine.applySyncedCooldown(latest)) }
      case .exposure(let tip, let variant, let since) where role == .hosted:
        let value = Self.exposureValue(variant: variant, since: since)
        guard exposures[tip]?.value != value else { continue }
        let hlc = clock.next(physicalSeconds: engine.clock.now())
        setExposure(tip, ParameterRegister(hlc: hlc, device: device, value: value), &effects)
        enqueue(.exposure(tip: tip, variant: variant, since: since), &effects, wallNow, hlc: hlc)
      default:
        continue
      }
    }
    for key in touched { reconcile(key, &effects) }
    if !effects.isEmpty { metaDirty = true }
    return effects
  }

  private func localDisplay(
    _ key: String, old: TipRecord, new: TipRecord, _ effects: inout SyncEffects, _ wallNow: Double
  ) {
    let generation = eligibility[key] ?? .zero
    var own = displays[key]?[device] ?? DisplayCounter(generation: generation, count: 0, duration: 0, seq: 0)
    if own.generation != generation { own = DisplayCounter(generation: generation, count: 0, duration: 0, seq: 0) }
    own.count += new.displayCount - old.displayCount
    own.duration += max(0, new.displayedDuration - old.displayedDuration)
    let at = new.lastDisplayedAt ?? engine.clock.now()
    own.first = own.first ?? at
    own.last = at
    let hlc = clock.next(physicalSeconds: engine.clock.now())
    own.seq = hlc.rawValue
    setDisplay(key, device, own, &effects)
    enqueue(
      .display(
        key: key, generation: generation, count: own.count, duration: own.duration, first: own.first, last: own.last),
      &effects, wallNow, hlc: hlc)
  }

  private func addLocalInvalidation(
    _ key: String, reason: InvalidationReason, at: Double, _ effects: inout SyncEffects, _ wallNow: Double
  ) {
    let hlc = clock.next(physicalSeconds: engine.clock.now())
    insertInvalidation(key, Invalidation(hlc: hlc, device: device, reason: reason, at: at), &effects)
    enqueue(.invalidate(key: key, reason: reason, at: at), &effects, wallNow, hlc: hlc)
  }

  private func localResetEligibility(_ key: String, _ effects: inout SyncEffects, _ wallNow: Double) {
    let hlc = clock.next(physicalSeconds: engine.clock.now())
    raiseEligibility(key, to: hlc, &effects)
    enqueue(.resetEligibility(key: key), &effects, wallNow, hlc: hlc)
  }

  // MARK: - Remote changes

  /// Merges operations pulled from PostgreSQL (in cursor order; this device's own are skipped) and brings the engine
  /// to the merged values. `cursor` is the last row's cursor.
  public func applyRemote(_ operations: [SyncOperation?], cursor newCursor: Int64, wallNow: Double) -> SyncEffects {
    var effects = makeEffects()
    var donations: [String: [Donation]] = [:]
    var events: Set<String> = []
    var keys: Set<String> = []
    var parameterIDs: Set<String> = []
    var variantTips: Set<String> = []
    var cooldownMoved = false
    var exposureTips: Set<String> = []
    for case let operation? in operations where operation.device != device || operation.seq < since {
      clock.observe(operation.hlc)
      if case .reset = operation.body {
        guard operation.hlc > epoch else { continue }
        remoteReset(operation.hlc, &effects)
        donations = [:]
        events = []
        continue
      }
      if operation.epoch < epoch { continue }
      if operation.epoch > epoch {
        // Its device knew a reset this one has not seen yet: that reset comes first.
        remoteReset(operation.epoch, &effects)
        donations = [:]
        events = []
      }
      let from = operation.device
      switch operation.body {
      case .reset:
        break
      case .donation(let event, let at, let info, let lifetime):
        if lifetime > lifetimes[event]?[from] ?? 0 { setLifetime(event, from, lifetime, &effects) }
        donations[event, default: []].append(Donation(at: at, info: info))
        events.insert(event)
      case .display(let key, let generation, let count, let duration, let first, let last):
        guard isSynced(key) else { continue }
        let current = eligibility[key] ?? .zero
        if generation < current { continue }
        if generation > current { raiseEligibility(key, to: generation, &effects) }
        if let existing = displays[key]?[from], existing.generation == generation, existing.seq >= operation.seq {
          continue
        }
        let counter = DisplayCounter(
          generation: generation, count: count, duration: duration, first: first, last: last, seq: operation.seq)
        setDisplay(key, from, counter, &effects)
        keys.insert(key)
      case .invalidate(let key, let reason, let at):
        guard isSynced(key), operation.hlc > eligibility[key] ?? .zero else { continue }
        insertInvalidation(key, Invalidation(hlc: operation.hlc, device: from, reason: reason, at: at), &effects)
        keys.insert(key)
      case .resetEligibility(let key):
        guard isSynced(key), operation.hlc > eligibility[key] ?? .zero else { continue }
        raiseEligibility(key, to: operation.hlc, &effects)
        keys.insert(key)
      case .parameter(let id, let value):
        let register = ParameterRegister(hlc: operation.hlc, device: from, value: value)
        if let existing = parameters[id], !register.isNewer(than: existing) { continue }
        setParameter(id, register, &effects)
        parameterIDs.insert(id)
      case .variant(let tip, let variant):
        guard role == .hosted else { continue }
        let register = ParameterRegister(hlc: operation.hlc, device: from, value: .string(variant))
        if let existing = variants[tip], !register.isNewer(than: existing) { continue }
        setVariant(tip, register, &effects)
        variantTips.insert(tip)
      case .cooldown(let at):
        guard role == .hosted, at > cooldown ?? -.infinity else { continue }
        setCooldown(at, &effects)
        cooldownMoved = true
      case .exposure(let tip, let variant, let since):
        guard role == .hosted else { continue }
        let register = ParameterRegister(
          hlc: operation.hlc, device: from, value: Self.exposureValue(variant: variant, since: since))
        if let existing = exposures[tip], !register.isNewer(than: existing) { continue }
        setExposure(tip, register, &effects)
        exposureTips.insert(tip)
      }
    }
    for event in events.sorted() {
      let total = lifetimes[event]?.values.reduce(0, +) ?? 0
      effects.mutations.append(engine.mergeDonations(donations[event] ?? [], lifetime: total, intoEvent: event))
    }
    for key in keys.sorted() {
      if checksBudgets { checkBudgets(key, &effects, wallNow) }
      reconcile(key, &effects)
    }
    for id in parameterIDs.sorted() {
      effects.mutations.append(engine.applySyncedParameter(id, parameters[id]?.value))
    }
    for tip in variantTips.sorted() {
      if let variant = variants[tip]?.value.stringValue {
        effects.mutations.append(engine.applySyncedVariant(tip, variant))
      }
    }
    if cooldownMoved, let cooldown { effects.mutations.append(engine.applySyncedCooldown(cooldown)) }
    for tip in exposureTips.sorted() { applyExposure(tip, &effects) }
    if newCursor > cursor {
      cursor = newCursor
      effects.write(.meta(key: MetaKey.cursor, value: String(newCursor)))
    }
    metaDirty = true
    return effects
  }

  func remoteReset(_ hlc: HLC, _ effects: inout SyncEffects) {
    startEpoch(hlc, &effects)
    effects.mutations.append(engine.reset())
  }

  /// A record's budgets reached by displays merged from other devices: invalidate it here, as a display would have
  /// (count first, then duration). Every device that sees it does the same; the earliest invalidation wins.
  private func checkBudgets(_ key: String, _ effects: inout SyncEffects, _ wallNow: Double) {
    let record = projection(key)
    guard record.invalidationReason == nil,
      let options = engine.definition(of: Engine.tipID(ofRecordKey: key))?.options
    else { return }
    let now = engine.clock.now()
    if let maxCount = options.maxDisplayCount, record.displayCount >= maxCount {
      addLocalInvalidation(key, reason: .displayCountExceeded, at: now, &effects, wallNow)
    } else if let maxDuration = options.maxDisplayDuration, record.displayedDuration >= maxDuration {
      addLocalInvalidation(key, reason: .displayDurationExceeded, at: now, &effects, wallNow)
    }
  }
}

/// Why sync cannot start with this datastore (another account or device), as a sentence.
public struct SyncSetupError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
