// MARK: - A/B variants
//
// A tip may declare copy variants (one rule tree, several copies). Each install sees one: the variant a stable hash
// of the install id and the tip id picks, the same on every machine and across restarts, unless a client forced
// another (`setVariant`). The assignment is stored, so adding a variant later does not move installs that already
// have one. Display count, duration and invalidation are per variant (each variant's record is stored under
// `tipId\u{1F}variant`); events and parameters are shared.

extension Engine {
  /// The key a tip's record is stored under for `variant`.
  public static func recordKey(tipID: String, variant: String?) -> String {
    guard let variant else { return tipID }
    return tipID + "\u{1F}" + variant
  }

  /// The variant index a stable hash of `installID` and `tipID` picks among `count` variants: FNV-1a (64-bit) over
  /// `installID`, a NUL and `tipID` in UTF-8, mixed by SplitMix64's finaliser, modulo `count`. Identical on every
  /// platform; evenly split.
  public static func variantIndex(installID: String, tipID: String, count: Int) -> Int {
    precondition(count > 0)
    return Int(assignmentHash(installID: installID, tipID: tipID) % UInt64(count))
  }

  /// The variant index for `weights` (each positive; nil counts 1): with every weight a whole number (the default
  /// equal shares among them), the hash modulo their sum falls in one variant's range of that many values — so equal
  /// weights pick exactly what ``variantIndex(installID:tipID:count:)`` picks and existing assignments never move;
  /// with fractional weights, the hash's top 53 bits as a fraction of 1 fall in one variant's share.
  public static func variantIndex(installID: String, tipID: String, weights: [Double?]) -> Int {
    precondition(!weights.isEmpty)
    let shares = weights.map { $0 ?? 1 }
    let hash = assignmentHash(installID: installID, tipID: tipID)
    if shares.allSatisfy({ $0 == $0.rounded() && $0 >= 1 && $0 < 0x1p52 }), shares.reduce(0, +) < 0x1p53 {
      var point = hash % UInt64(shares.reduce(0, +))
      for (index, share) in shares.enumerated() {
        if point < UInt64(share) { return index }
        point -= UInt64(share)
      }
      return shares.count - 1
    }
    let total = shares.reduce(0, +)
    var point = Double(hash >> 11) / 0x1p53 * total
    for (index, share) in shares.enumerated() {
      if point < share { return index }
      point -= share
    }
    return shares.count - 1
  }

  /// FNV-1a (64-bit) over `installID`, a NUL and `tipID` in UTF-8, mixed by SplitMix64's finaliser.
  static func assignmentHash(installID: String, tipID: String) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    func mix(_ byte: UInt8) {
      hash ^= UInt64(byte)
      hash = hash &* 0x0000_0100_0000_01b3
    }
    for byte in installID.utf8 { mix(byte) }
    mix(0)
    for byte in tipID.utf8 { mix(byte) }
    var z = hash &+ 0x9e37_79b9_7f4a_7c15
    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
    z ^= z >> 31
    return z
  }

  /// The install id variants are assigned from (nil until one is set).
  public var installIdentifier: String? { installID }

  /// The variant a registered tip shows this install (nil for a tip without variants).
  public func variant(of tipID: String) -> String? { slot(tipID)?.variant }

  /// Sets the install id. Tips with variants this install has not seen yet (no display, not invalidated) are
  /// assigned again from the new id; a tip already seen keeps its variant, so nobody's copy changes under them.
  public func setInstallID(_ id: String) throws(EngineError) -> Mutation {
    guard !id.isEmpty else { throw .invalidArgument(argument: "installId", problem: "must not be empty") }
    guard id != installID else { return finish([]) }
    let now = tick()
    installID = id
    var writes: [StateWrite] = [.installID(id)]
    var state: [Int] = []
    var rules: [Int] = []
    for case let slot? in slots where !slot.definition.variants.isEmpty && slot.record.isEmpty && !slot.exposed {
      let picked = hashedVariant(slot.definition)
      if picked != slot.variant {
        switchVariant(slot, to: picked)
        slot.reported = nil
        state.append(slot.index)
        rules += followers(of: slot.id, now: now)
      }
      if variantAssignments[slot.id] != picked {
        variantAssignments[slot.id] = picked
        writes.append(.variantAssignment(tipID: slot.id, variant: picked))
      }
    }
    return finish(settle(rules: rules, state: state, now: now), writes: writes)
  }

  /// Forces the variant a tip shows (nil: back to the one the install id picks). The tip is reported again, with
  /// the variant's own status and display budget.
  public func setVariant(_ tipID: String, _ variant: String?) throws(EngineError) -> Mutation {
    guard let slot = slot(tipID) else { throw .unknownTip(tipID) }
    let declared = slot.definition.variants
    guard !declared.isEmpty else {
      throw .invalidArgument(argument: "variant", problem: "cannot be set: tip \(tipID) declares no variants")
    }
    let chosen: String
    if let variant {
      guard declared.contains(where: { $0.name == variant }) else {
        let names = declared.map { $0.name }.joined(separator: ", ")
        throw .invalidArgument(
          argument: "variant", problem: "must name one of tip \(tipID)'s variants: \(names) (got \(variant))")
      }
      chosen = variant
    } else {
      chosen = hashedVariant(slot.definition)
    }
    let now = tick()
    var writes: [StateWrite] = []
    if variantAssignments[tipID] != chosen {
      variantAssignments[tipID] = chosen
      writes.append(.variantAssignment(tipID: tipID, variant: chosen))
    }
    guard chosen != slot.variant else { return finish([], writes: writes) }
    switchVariant(slot, to: chosen)
    slot.reported = nil
    return finish(settle(rules: followers(of: tipID, now: now), state: [slot.index], now: now), writes: writes)
  }

  // MARK: Internals

  /// The variant a definition shows: the stored assignment while the tip still declares it, else the hashed pick.
  /// Returns the write that stores a new assignment.
  func resolveVariant(_ definition: TipDefinition) -> (variant: String?, write: StateWrite?) {
    guard !definition.variants.isEmpty else { return (nil, nil) }
    if let assigned = variantAssignments[definition.id], definition.variant(assigned) != nil {
      return (assigned, nil)
    }
    let picked = hashedVariant(definition)
    variantAssignments[definition.id] = picked
    return (picked, .variantAssignment(tipID: definition.id, variant: picked))
  }

  /// The variant the hash picks: from the install id, or for a tip with a holdout from the account when one is
  /// configured (``EngineConfiguration/holdoutAccount``).
  func hashedVariant(_ definition: TipDefinition) -> String {
    let variants = definition.variants
    var key = installID ?? ""
    if let account = configuration.holdoutAccount, variants.contains(where: \.holdout) { key = account }
    let index = Self.variantIndex(installID: key, tipID: definition.id, weights: variants.map(\.weight))
    return variants[index].name
  }

  /// Moves a slot to another variant: parks the current variant's record with the orphans and takes the new one's.
  /// A counterfactual exposure of the variant it leaves ends.
  func switchVariant(_ slot: TipSlot, to variant: String?) {
    if slot.exposed, let old = slot.variant {
      exposures[slot.recordKey] = nil
      pendingWrites.append(.exposure(tipID: slot.id, variant: old, since: nil))
    }
    if !slot.record.isEmpty { orphanRecords[slot.recordKey] = slot.record }
    slot.variant = variant
    slot.recordKey = Self.recordKey(tipID: slot.id, variant: variant)
    slot.record = orphanRecords.removeValue(forKey: slot.recordKey) ?? TipRecord()
    refreshVariantFlags(slot)
  }

  /// Whether the slot's variant is a holdout, and whether that holdout's counterfactual exposure is open.
  func refreshVariantFlags(_ slot: TipSlot) {
    slot.holdout = slot.definition.variant(slot.variant)?.holdout ?? false
    if !slot.holdout, let variant = slot.variant, exposures.removeValue(forKey: slot.recordKey) != nil {
      // The variant is no longer a holdout (its definition changed): its exposure ends.
      pendingWrites.append(.exposure(tipID: slot.id, variant: variant, since: nil))
    }
    slot.exposed = slot.holdout && exposures[slot.recordKey] != nil
    if slot.holdout { holdoutSlots.insert(slot.index) } else { holdoutSlots.remove(slot.index) }
  }

  /// Whether the variant this install shows of a registered tip is a holdout.
  public func isHoldout(_ tipID: String) -> Bool { slot(tipID)?.holdout ?? false }
}
