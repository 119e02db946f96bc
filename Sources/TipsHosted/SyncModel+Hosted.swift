public import TipsEngine
import TipsJSON
public import TipsRecords
public import TipsSync

// Hosted accounts: a node serving the account keeps nothing of its own, so it loads the account from PostgreSQL —
// a snapshot of the merged state and the operations after it — and a snapshot is made from the same state.

extension SyncModel {
  /// Every piece of merged state as `sync_state` rows, in a stable order: what a hosted account's snapshot stores
  /// (with ``snapshotMeta`` and the engine's donations), read back by ``init(engine:snapshot:account:device:outboxLimit:role:isSynced:)``.
  public func stateRows() -> [SyncStateRow] {
    var rows: [SyncStateRow] = []
    for (event, counts) in lifetimes.sorted(by: { $0.key < $1.key }) {
      for (from, count) in counts.sorted(by: { $0.key < $1.key }) {
        rows.append(SyncStateRow(kind: Kind.lifetime, device: from, key: event, value: String(count)))
      }
    }
    for (key, counters) in displays.sorted(by: { $0.key < $1.key }) {
      for (from, counter) in counters.sorted(by: { $0.key < $1.key }) {
        rows.append(SyncStateRow(kind: Kind.display, device: from, key: key, value: Self.encode(counter)))
      }
    }
    for (key, hlc) in eligibility.sorted(by: { $0.key < $1.key }) {
      rows.append(SyncStateRow(kind: Kind.eligibility, device: "", key: key, value: String(hlc.rawValue)))
    }
    for (key, list) in invalidations.sorted(by: { $0.key < $1.key }) where !list.isEmpty {
      rows.append(SyncStateRow(kind: Kind.invalidations, device: "", key: key, value: Self.encode(list)))
    }
    for (id, register) in parameters.sorted(by: { $0.key < $1.key }) {
      rows.append(SyncStateRow(kind: Kind.parameter, device: "", key: id, value: Self.encode(register)))
    }
    for (tip, register) in variants.sorted(by: { $0.key < $1.key }) {
      rows.append(SyncStateRow(kind: Kind.variant, device: "", key: tip, value: Self.encode(register)))
    }
    if let cooldown {
      rows.append(SyncStateRow(kind: Kind.cooldown, device: "", key: "", value: JSONValue.double(cooldown).jsonString))
    }
    for (tip, register) in exposures.sorted(by: { $0.key < $1.key }) {
      rows.append(SyncStateRow(kind: Kind.exposure, device: "", key: tip, value: Self.encode(register)))
    }
    return rows
  }

  /// The `sync_meta` a snapshot stores: the epoch, the clock and the cursor it was taken at.
  public var snapshotMeta: [String: String] {
    [MetaKey.epoch: String(epoch.rawValue), MetaKey.clock: String(clock.last.rawValue), MetaKey.cursor: String(cursor)]
  }

  /// Hosted: brings a fresh engine (the catalog registered, no state) to the merged state the model was loaded with
  /// — `donations` are the snapshot's kept donations per event — through the same merge calls as a pull.
  public func applyLoadedState(donations: [String: [Donation]]) -> SyncEffects {
    var effects = makeEffects()
    for event in Set(donations.keys).union(lifetimes.keys).sorted() {
      let total = lifetimes[event]?.values.reduce(0, +) ?? 0
      effects.mutations.append(engine.mergeDonations(donations[event] ?? [], lifetime: total, intoEvent: event))
    }
    for key in Set(displays.keys).union(invalidations.keys).sorted() where isSynced(key) {
      reconcile(key, &effects)
    }
    for (id, register) in parameters.sorted(by: { $0.key < $1.key }) {
      effects.mutations.append(engine.applySyncedParameter(id, register.value))
    }
    for (tip, register) in variants.sorted(by: { $0.key < $1.key }) {
      if let variant = register.value.stringValue { effects.mutations.append(engine.applySyncedVariant(tip, variant)) }
    }
    if let cooldown { effects.mutations.append(engine.applySyncedCooldown(cooldown)) }
    for tip in exposures.keys.sorted() { applyExposure(tip, &effects) }
    return effects
  }

  /// Hosted: merges the operations stored after the snapshot — every one as another device's, this node's own too
  /// (the engine was built from nothing) — then starts this node's life: its operations from now on come after
  /// ``since`` and are skipped when pulled back.
  public func applyLoaded(_ operations: [SyncOperation?], cursor newCursor: Int64, wallNow: Double) -> SyncEffects {
    since = .max
    let effects = applyRemote(operations, cursor: newCursor, wallNow: wallNow)
    since = clock.next(physicalSeconds: engine.clock.now()).rawValue
    return effects
  }

  /// Hosted: the variant the engine shows for each tip whose assignment the account does not store yet (assigned
  /// from the account id on this node), as operations — so an account keeps its variants when the catalog adds
  /// one, and an export carries them.
  public func storeUnrecordedVariants(wallNow: Double) -> SyncEffects {
    var writes: [StateWrite] = []
    for (tip, variant) in engine.storedVariantAssignments.sorted(by: { $0.key < $1.key }) where variants[tip] == nil {
      writes.append(.variantAssignment(tipID: tip, variant: variant))
    }
    return writes.isEmpty ? SyncEffects() : recordLocal(writes, wallNow: wallNow)
  }

  /// Hosted: this node pushed its operations and PostgreSQL returned the account's last cursor; when it is exactly
  /// the pushed count past the model's, nobody else wrote in between, so there is nothing to pull for it.
  public func advanceCursorAfterPush(pushed: Int, lastCursor: Int64) -> Bool {
    guard lastCursor == cursor + Int64(pushed) else { return false }
    cursor = lastCursor
    return true
  }

}
