public import TipsJSON

// MARK: - Merging state from other devices
//
// The sync layer (`TipsSync`) keeps, per account, what every device contributed and works out the merged value of
// each synced piece of state: a tip record, an event's history and lifetime count, a parameter. These calls put such a
// value into the engine as any other mutation does — re-evaluating only what reads it and returning the changes to
// notify and the writes to persist — so a subscriber sees a change merged from another device exactly like a local
// one. They never read the clock for the merged values themselves (those carry their own instants).

extension Engine {
  /// The tip id of a record key (`tipId` or `tipId\u{1F}variant`).
  public static func tipID(ofRecordKey key: String) -> String {
    guard let separator = key.firstIndex(of: "\u{1F}") else { return key }
    return String(key[..<separator])
  }

  /// The durable record stored under `key` (a registered tip's current record, or one of a tip not registered or of
  /// a variant this install does not show); empty when there is none.
  public func record(forKey key: String) -> TipRecord {
    if let slot = slot(Self.tipID(ofRecordKey: key)), slot.recordKey == key { return slot.record }
    return orphanRecords[key] ?? TipRecord()
  }

  /// Every record key that holds a non-empty record.
  public var recordKeys: [String] {
    var keys = Array(orphanRecords.keys)
    for case let slot? in slots where !slot.record.isEmpty { keys.append(slot.recordKey) }
    return keys
  }

  /// Every event with donations or a lifetime count.
  public var eventIDs: [String] { logList.filter { $0.lifetime > 0 || $0.count > 0 }.map(\.id) }

  /// How many donations of an event its history keeps (`events/configure`, else the engine's default).
  public func donationLimit(_ eventID: String) -> Int { logs[eventID]?.limit ?? configuration.defaultDonationLimit }

  /// Persisted parameter values that are set (not at their default), by id.
  public var storedParameters: [String: JSONValue] {
    var values: [String: JSONValue] = [:]
    for parameter in parameters.values where parameter.isPersisted {
      if let stored = parameter.stored { values[parameter.id] = stored }
    }
    return values
  }

  /// Replaces the record stored under `key` with a merged one, re-evaluating the tip that shows it (if registered).
  public func applySyncedRecord(_ record: TipRecord, forKey key: String) -> Mutation {
    let now = tick()
    guard record != self.record(forKey: key) else { return finish([]) }
    let write = StateWrite.tipRecord(id: key, record)
    if let slot = slot(Self.tipID(ofRecordKey: key)), slot.recordKey == key {
      slot.record = record
      return finish(settle(rules: followers(of: slot.id, now: now), state: [slot.index], now: now), writes: [write])
    }
    orphanRecords[key] = record.isEmpty ? nil : record
    return finish([], writes: [write])
  }

  /// Merges donations of other devices into an event's history (in ``Donation/precedes(_:_:canonical:)`` order —
  /// canonical with sync, see ``EngineConfiguration/canonicalDonationOrder`` — newest `maxDonations` kept) and sets its
  /// lifetime count, the sum over devices. Writes appends when every merged donation is newer than what is stored (the
  /// common case), else rewrites the event's rows.
  public func mergeDonations(_ donations: [Donation], lifetime: Int, intoEvent eventID: String) -> Mutation {
    let now = tick()
    let log = eventLog(eventID)
    let limit = limit(of: log)
    let before = log.count == 0 ? [] : log.donations
    let lifetimeBefore = log.lifetime
    let canonical = configuration.canonicalDonationOrder
    let sorted = donations.sorted { Donation.precedes($0, $1, canonical: canonical) }
    var inOrder = true
    for donation in sorted where !log.insert(donation, canonical: canonical) { inOrder = false }
    log.lifetime = max(lifetime, log.count)
    log.trim(to: limit)
    var writes: [StateWrite] = []
    if inOrder {
      for donation in sorted {
        writes.append(.donation(eventID: eventID, donation, keepNewest: limit))
      }
      if log.lifetime != lifetimeBefore + donations.count { writes.append(.lifetime(eventID: eventID, log.lifetime)) }
    } else if log.donations != before {
      writes.append(.donations(eventID: eventID, log.donations, lifetime: log.lifetime))
    } else if log.lifetime != lifetimeBefore {
      writes.append(.lifetime(eventID: eventID, log.lifetime))
    }
    guard !writes.isEmpty else { return finish([]) }
    return finish(settle(rules: log.dependents, now: now), writes: writes)
  }

  /// Sets a parameter's stored value merged from another device (nil: back to its default). A transient parameter
  /// is this device's own and is left alone; a value of another type than the declared default is ignored.
  public func applySyncedParameter(_ id: String, _ value: JSONValue?) -> Mutation {
    let now = tick()
    let parameter = parameterSlot(id)
    guard parameter.isPersisted else { return finish([]) }
    var converted = value
    if let value, let definition = parameter.definition {
      guard let coerced = Self.coerce(value, to: definition.defaultValue) else { return finish([]) }
      converted = coerced
    }
    guard parameter.stored != converted else { return finish([]) }
    let old = parameter.value
    parameter.stored = converted
    let write: StateWrite = converted.map { .parameter(id: id, value: $0) } ?? .deleteParameter(id: id)
    let dirty = parameter.value != old ? parameter.dependents : []
    return finish(settle(rules: dirty, now: now), writes: [write])
  }
}

// MARK: - State a hosted account replicates besides the synced state
//
// Hosted mode (one tipsd for every user of an app) keeps an account's whole state in PostgreSQL, so what a device
// keeps as its own — the display-frequency cooldown and the variant each tip shows — is replicated between the nodes
// serving the account too.

extension Engine {
  /// The instant the display-frequency cooldown started, if any.
  public var cooldownStart: Timestamp? { cooldownStartedAt }

  /// The stored variant assignment of every tip with variants, by tip id.
  public var storedVariantAssignments: [String: String] { variantAssignments }

  /// Moves the cooldown's start to `start` when that is later than the engine's (a display on another node), and
  /// re-evaluates the tips the cooldown gates.
  public func applySyncedCooldown(_ start: Timestamp) -> Mutation {
    let now = tick()
    guard start > cooldownStartedAt ?? -.infinity else { return finish([]) }
    let before = cooldownActive(now)
    cooldownStartedAt = start
    return finish(settle(state: cooldownGateChanged(before: before, now: now), now: now), writes: [.cooldown(start)])
  }

  /// Adopts the instant a held-out tip's counterfactual exposure opened, as another node (or the account's stored
  /// state) recorded it: when the exposure is open here too (this engine would display the tip), its `since` becomes
  /// that instant — a node that loads an account does not count an exposure as opening again at the load. Nothing is
  /// written (the exposure was recorded where it opened), nothing else changes.
  public func applySyncedExposure(_ tipID: String, variant: String, since: Timestamp?) -> Mutation {
    guard let since, let slot = slot(tipID), slot.holdout, slot.variant == variant, slot.exposed else {
      return Mutation(changes: [], writes: [])
    }
    exposures[slot.recordKey] = since
    return Mutation(changes: [], writes: [])
  }

  /// Sets the variant a tip is assigned (decided on another node); a registered tip that declares it switches to it
  /// and is reported again, as ``setVariant(_:_:)`` does.
  public func applySyncedVariant(_ tipID: String, _ variant: String) -> Mutation {
    guard variantAssignments[tipID] != variant else { return finish([]) }
    let now = tick()
    variantAssignments[tipID] = variant
    let writes: [StateWrite] = [.variantAssignment(tipID: tipID, variant: variant)]
    guard let slot = slot(tipID), slot.definition.variant(variant) != nil, slot.variant != variant else {
      return finish([], writes: writes)
    }
    switchVariant(slot, to: variant)
    slot.reported = nil
    return finish(settle(state: [slot.index], now: now), writes: writes)
  }
}
