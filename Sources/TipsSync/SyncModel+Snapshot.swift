public import TipsEngine
public import TipsRecords

// A device whose cursor fell behind the operations PostgreSQL still keeps (`tipsd.ops` is pruned up to the account's
// snapshot, #34): it cannot read the operations it missed one by one, so it joins the snapshot's merged state into
// its own and goes on pulling from the snapshot's cursor.

extension SyncModel {
  /// Joins a snapshot of the account's merged state (``stateRows()``, ``snapshotMeta`` and each event's kept
  /// donations, as of `cursor`) into this model, as if every operation up to `cursor` had been pulled: every register
  /// is merged with the same rule as an operation would be (counters and cursors take the larger, last-writer-wins
  /// registers the newer, invalidations the union), so what this device already had — its own contributions, pushed
  /// or not, and what it pulled before — counts once. Operations of a reset newer than the snapshot void it, as they
  /// would void its operations; a reset in the snapshot that this device had not seen is applied first.
  public func mergeSnapshot(
    rows: [SyncStateRow], meta: [String: String], donations: [String: [Donation]], cursor newCursor: Int64,
    wallNow: Double
  ) -> SyncEffects {
    var effects = makeEffects()
    if let clock = meta[MetaKey.clock].flatMap({ Int64($0) }) { self.clock.observe(HLC(rawValue: clock)) }
    let snapshotEpoch = HLC(rawValue: meta[MetaKey.epoch].flatMap { Int64($0) } ?? 0)
    if snapshotEpoch > epoch { remoteReset(snapshotEpoch, &effects) }
    if snapshotEpoch == epoch { join(rows: rows, donations: donations, &effects) }
    if newCursor > cursor {
      cursor = newCursor
      effects.write(.meta(key: MetaKey.cursor, value: String(newCursor)))
    }
    metaDirty = true
    return effects
  }

  private func join(rows: [SyncStateRow], donations: [String: [Donation]], _ effects: inout SyncEffects) {
    // The snapshot's rows decoded exactly as the datastore's are (``load(_:)``), into a model of their own.
    let mine = (lifetimes, displays, eligibility, invalidations, parameters, variants, cooldown, exposures)
    lifetimes = [:]
    displays = [:]
    eligibility = [:]
    invalidations = [:]
    parameters = [:]
    variants = [:]
    cooldown = nil
    exposures = [:]
    for row in rows { load(row) }
    let theirs = (
      lifetimes: lifetimes, displays: displays, eligibility: eligibility, invalidations: invalidations,
      parameters: parameters, variants: variants, cooldown: cooldown, exposures: exposures
    )
    (lifetimes, displays, eligibility, invalidations, parameters, variants, cooldown, exposures) = mine

    var keys: Set<String> = []
    for (event, counts) in theirs.lifetimes.sorted(by: { $0.key < $1.key }) {
      for (from, count) in counts.sorted(by: { $0.key < $1.key }) where count > lifetimes[event]?[from] ?? 0 {
        setLifetime(event, from, count, &effects)
      }
    }
    for (key, generation) in theirs.eligibility.sorted(by: { $0.key < $1.key })
    where isSynced(key) && generation > eligibility[key] ?? .zero {
      raiseEligibility(key, to: generation, &effects)
      keys.insert(key)
    }
    for (key, counters) in theirs.displays.sorted(by: { $0.key < $1.key }) where isSynced(key) {
      let generation = eligibility[key] ?? .zero
      for (from, counter) in counters.sorted(by: { $0.key < $1.key }) where counter.generation == generation {
        if let existing = displays[key]?[from], existing.generation == generation, existing.seq >= counter.seq {
          continue
        }
        setDisplay(key, from, counter, &effects)
        keys.insert(key)
      }
    }
    for (key, list) in theirs.invalidations.sorted(by: { $0.key < $1.key }) where isSynced(key) {
      for invalidation in list where invalidation.hlc > eligibility[key] ?? .zero {
        let before = invalidations[key]
        insertInvalidation(key, invalidation, &effects)
        if invalidations[key] != before { keys.insert(key) }
      }
    }
    var parameterIDs: [String] = []
    for (id, register) in theirs.parameters.sorted(by: { $0.key < $1.key }) {
      if let existing = parameters[id], !register.isNewer(than: existing) { continue }
      setParameter(id, register, &effects)
      parameterIDs.append(id)
    }
    if role == .hosted {
      for (tip, register) in theirs.variants.sorted(by: { $0.key < $1.key }) {
        if let existing = variants[tip], !register.isNewer(than: existing) { continue }
        setVariant(tip, register, &effects)
        if let variant = register.value.stringValue {
          effects.mutations.append(engine.applySyncedVariant(tip, variant))
        }
      }
      if let at = theirs.cooldown, at > cooldown ?? -.infinity {
        setCooldown(at, &effects)
        effects.mutations.append(engine.applySyncedCooldown(at))
      }
      for (tip, register) in theirs.exposures.sorted(by: { $0.key < $1.key }) {
        if let existing = exposures[tip], !register.isNewer(than: existing) { continue }
        setExposure(tip, register, &effects)
        applyExposure(tip, &effects)
      }
    }
    // Donations: the snapshot's kept ones that this engine does not hold yet (counted as a multiset: two equal
    // donations are two), merged with the joined lifetime count.
    for event in Set(donations.keys).union(theirs.lifetimes.keys).sorted() {
      var held: [Donation: Int] = [:]
      for donation in engine.donations(event) { held[donation, default: 0] += 1 }
      var missing: [Donation] = []
      for donation in donations[event] ?? [] {
        if let count = held[donation], count > 0 {
          held[donation] = count - 1
        } else {
          missing.append(donation)
        }
      }
      let total = lifetimes[event]?.values.reduce(0, +) ?? 0
      effects.mutations.append(engine.mergeDonations(missing, lifetime: total, intoEvent: event))
    }
    for key in keys.sorted() { reconcile(key, &effects) }
    for id in parameterIDs { effects.mutations.append(engine.applySyncedParameter(id, parameters[id]?.value)) }
  }
}
