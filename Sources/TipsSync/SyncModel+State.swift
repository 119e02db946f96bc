public import TipsEngine
package import TipsJSON
public import TipsRecords

/// The sync model's merged values and its state changes, each mirrored by a write (split from SyncModel.swift).
extension SyncModel {
  // MARK: - Merged values

  /// The merged record of a key (see the type's rules).
  public func projection(_ key: String) -> TipRecord {
    let generation = eligibility[key] ?? .zero
    var record = TipRecord()
    if let counters = displays[key] {
      for device in counters.keys.sorted() {
        guard let counter = counters[device], counter.generation == generation else { continue }
        record.displayCount += counter.count
        record.displayedDuration += counter.duration
        if let first = counter.first { record.firstDisplayedAt = min(record.firstDisplayedAt ?? first, first) }
        if let last = counter.last { record.lastDisplayedAt = max(record.lastDisplayedAt ?? last, last) }
      }
    }
    if let winner = invalidations[key]?.first {
      record.invalidationReason = winner.reason
      record.invalidatedAt = winner.at
    }
    return record
  }

  /// Brings the engine's record of `key` to the merged one.
  package func reconcile(_ key: String, _ effects: inout SyncEffects) {
    let merged = projection(key)
    if engine.record(forKey: key) != merged {
      effects.mutations.append(engine.applySyncedRecord(merged, forKey: key))
    }
  }

  // MARK: - State changes (each mirrored by a write)

  func enqueue(
    _ body: SyncOperation.Body, _ effects: inout SyncEffects, _ wallNow: Double, hlc given: HLC? = nil
  ) {
    // The sequence number is the HLC: strictly increasing per device, and — unlike a counter — still increasing when
    // a device's datastore is replaced under the same id (PostgreSQL would refuse a repeated (device, seq)).
    let hlc = given ?? clock.next(physicalSeconds: engine.clock.now())
    let operation = SyncOperation(device: device, seq: hlc.rawValue, hlc: hlc, epoch: epoch, body: body)
    outbox.add(operation, created: wallNow, donationLimit: { [engine] in engine.donationLimit($0) }, into: &effects)
  }

  func startEpoch(_ hlc: HLC, _ effects: inout SyncEffects) {
    epoch = hlc
    lifetimes = [:]
    displays = [:]
    eligibility = [:]
    invalidations = [:]
    parameters = [:]
    // A reset keeps variant assignments (as the engine does) and ends the cooldown and the exposures.
    cooldown = nil
    exposures = [:]
    effects.write(.clearState)
    for (tip, register) in variants.sorted(by: { $0.key < $1.key }) {
      effects.write(.state(kind: Kind.variant, device: "", key: tip, value: Self.encode(register)))
    }
  }

  func raiseEligibility(_ key: String, to hlc: HLC, _ effects: inout SyncEffects) {
    eligibility[key] = hlc
    effects.write(.state(kind: Kind.eligibility, device: "", key: key, value: String(hlc.rawValue)))
    if let list = invalidations[key] {
      let kept = list.filter { $0.hlc > hlc }
      if kept != list { setInvalidations(key, kept, &effects) }
    }
    if let counters = displays[key] {
      for (from, counter) in counters where counter.generation < hlc {
        displays[key]?[from] = nil
        effects.write(.state(kind: Kind.display, device: from, key: key, value: nil))
      }
    }
  }

  func insertInvalidation(_ key: String, _ invalidation: Invalidation, _ effects: inout SyncEffects) {
    var list = invalidations[key] ?? []
    guard !list.contains(where: { $0.hlc == invalidation.hlc && $0.device == invalidation.device }) else { return }
    list.append(invalidation)
    list.sort { $0.precedes($1) }
    setInvalidations(key, list, &effects)
  }

  private func setInvalidations(_ key: String, _ list: [Invalidation], _ effects: inout SyncEffects) {
    invalidations[key] = list.isEmpty ? nil : list
    effects.write(
      .state(kind: Kind.invalidations, device: "", key: key, value: list.isEmpty ? nil : Self.encode(list)))
  }

  func setLifetime(_ event: String, _ from: String, _ count: Int, _ effects: inout SyncEffects) {
    lifetimes[event, default: [:]][from] = count
    effects.write(.state(kind: Kind.lifetime, device: from, key: event, value: String(count)))
  }

  func setDisplay(_ key: String, _ from: String, _ counter: DisplayCounter, _ effects: inout SyncEffects) {
    displays[key, default: [:]][from] = counter
    effects.write(.state(kind: Kind.display, device: from, key: key, value: Self.encode(counter)))
  }

  func setParameter(_ id: String, _ register: ParameterRegister, _ effects: inout SyncEffects) {
    parameters[id] = register
    effects.write(.state(kind: Kind.parameter, device: "", key: id, value: Self.encode(register)))
  }

  func setVariant(_ tip: String, _ register: ParameterRegister, _ effects: inout SyncEffects) {
    variants[tip] = register
    effects.write(.state(kind: Kind.variant, device: "", key: tip, value: Self.encode(register)))
  }

  func setExposure(_ tip: String, _ register: ParameterRegister, _ effects: inout SyncEffects) {
    exposures[tip] = register
    effects.write(.state(kind: Kind.exposure, device: "", key: tip, value: Self.encode(register)))
  }

  /// The engine adopts the exposure's instant (``Engine/applySyncedExposure(_:variant:since:)``).
  package func applyExposure(_ tip: String, _ effects: inout SyncEffects) {
    guard let value = exposures[tip]?.value, let variant = value["variant"]?.stringValue else { return }
    effects.mutations.append(engine.applySyncedExposure(tip, variant: variant, since: value["since"]?.doubleValue))
  }

  static func exposureValue(variant: String, since: Double?) -> JSONValue {
    .object(["variant": .string(variant), "since": since.map { .double($0) } ?? .null])
  }

  func setCooldown(_ at: Double, _ effects: inout SyncEffects) {
    cooldown = at
    effects.write(.state(kind: Kind.cooldown, device: "", key: "", value: JSONValue.double(at).jsonString))
  }

  /// A step's effects: they keep writes unless the model is a hosted account's (``SyncEffects/keepsWrites``).
  package func makeEffects() -> SyncEffects { SyncEffects(keepsWrites: role != .hosted) }

  /// Appends the clock and epoch to a step's writes.
  func finishMeta(_ effects: inout SyncEffects) {
    effects.write(.meta(key: MetaKey.clock, value: String(clock.last.rawValue)))
    effects.write(.meta(key: MetaKey.epoch, value: String(epoch.rawValue)))
    metaDirty = false
  }

  /// The clock and epoch, when they changed since last asked: written once per commit rather than once per change.
  public func takeMetaWrites() -> [SyncWrite] {
    guard metaDirty else { return [] }
    var effects = makeEffects()
    finishMeta(&effects)
    return effects.writes
  }
}
