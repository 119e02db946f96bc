import TipsJSON

extension Engine {
  // MARK: - Dependencies

  /// Compiles a slot's rules and adds it to the indexes of what they read.
  func attach(_ slot: TipSlot, now: Timestamp) {
    var dependencies = Dependencies()
    var program = RuleProgram()
    for rule in slot.definition.rules { compile(rule, into: &program, &dependencies, slot: slot.index) }
    slot.rules = program
    for tip in dependencies.tips { tipDependents[tip, default: []].insertSorted(slot.index) }
    for follow in dependencies.follows { followWatches[follow] = followElapsed(follow, now: now) }
    for log in dependencies.events { log.dependents.insertSorted(slot.index) }
    for parameter in dependencies.parameters { parameter.dependents.insertSorted(slot.index) }
    for key in dependencies.windows {
      let watch: WindowWatch
      if let existing = windows[key] {
        watch = existing
      } else {
        watch = WindowWatch(startSeq: logList[key.event].windowStartSeq(within: key.within, now: now))
        windows[key] = watch
      }
      watch.dependents.insertSorted(slot.index)
    }
  }

  /// Removes a slot from the indexes of what its rules read.
  func detach(_ slot: TipSlot) {
    let dependencies = dependencies(of: slot)
    for tip in dependencies.tips {
      tipDependents[tip]?.removeSorted(slot.index)
      if tipDependents[tip]?.isEmpty == true { tipDependents[tip] = nil }
    }
    for follow in dependencies.follows { followWatches[follow] = nil }
    for log in dependencies.events { log.dependents.removeSorted(slot.index) }
    for parameter in dependencies.parameters { parameter.dependents.removeSorted(slot.index) }
    for key in dependencies.windows {
      guard let watch = windows[key] else { continue }
      watch.dependents.removeSorted(slot.index)
      if watch.dependents.isEmpty { windows[key] = nil }
    }
    slot.rules = RuleProgram()
  }

  /// What a slot's rules read, compiled again from its definition: the same logs, parameters, windows and follows
  /// as when it was attached (logs and parameters are never removed, and the definition changes only after a detach).
  /// A slot does not keep them: they are read only to detach and explain, and kept they cost a resident hosted
  /// account ≈ 80 bytes a tip (#47).
  func dependencies(of slot: TipSlot) -> Dependencies {
    var dependencies = Dependencies()
    var program = RuleProgram()
    for rule in slot.definition.rules { compile(rule, into: &program, &dependencies, slot: slot.index) }
    return dependencies
  }

  /// Appends a rule's subtree to a program.
  func compile(_ rule: Rule, into program: inout RuleProgram, _ dependencies: inout Dependencies, slot: Int) {
    switch rule {
    case .tip(let rule):
      dependencies.add(tip: rule.tipID)
      if case .invalidated(let duration?) = rule.condition {
        dependencies.add(FollowKey(slot: slot, tip: rule.tipID, duration: duration))
      }
      program.ops.append(RuleProgram.Op(kind: .tip, extra: program.tipRules.count))
      program.tipRules.append(rule)
    case .event(let rule):
      let log = eventLog(rule.eventID)
      dependencies.add(log)
      if let within = rule.within { dependencies.add(WindowKey(event: log.number, within: within)) }
      var op = RuleProgram.Op(kind: .count, op: rule.countOperator, value: rule.countValue, log: .passUnretained(log))
      if rule.matching != nil || rule.largestGroupBy != nil {
        op.kind = .filtered
        op.extra = program.filters.count
        program.filters.append(FilterKey(within: rule.within, matching: rule.matching, groupBy: rule.largestGroupBy))
      } else if let within = rule.within {
        op.kind = .window
        op.within = within
      }
      program.ops.append(op)
    case .parameter(let rule):
      let parameter = parameterSlot(rule.parameterID)
      dependencies.add(parameter)
      program.ops.append(
        RuleProgram.Op(
          kind: .parameter, op: rule.op, parameter: .passUnretained(parameter), extra: program.constants.count))
      program.constants.append(rule.value)
    case .allOf(let rules), .anyOf(let rules):
      let start = program.ops.count
      program.ops.append(RuleProgram.Op(kind: { if case .allOf = rule { .all } else { .any } }()))
      for child in rules { compile(child, into: &program, &dependencies, slot: slot) }
      program.ops[start].value = program.ops.count
    case .not(let child):
      let start = program.ops.count
      program.ops.append(RuleProgram.Op(kind: .not))
      compile(child, into: &program, &dependencies, slot: slot)
      program.ops[start].value = program.ops.count
    }
  }

  // MARK: - Settling

  /// Re-evaluates every tip and group (reset, restore, a clock that went backwards).
  func settleEverything(now: Timestamp) -> [Change] {
    for (key, watch) in windows {
      watch.startSeq = logList[key.event].windowStartSeq(within: key.within, now: now)
    }
    for follow in Array(followWatches.keys) { followWatches[follow] = followElapsed(follow, now: now) }
    for group in groups.values { group.open = group.definition.schedule?.contains(now) ?? true }
    suppressionActive = suppression?.isActive(at: now) ?? false
    cooldownGate = cooldownActive(now)
    timeSettled = now
    let all = slots.compactMap { $0?.index }
    return settle(rules: all, groups: Array(groups.keys), now: now)
  }

  /// Brings tips and groups up to date and returns what changed: tip changes in registration order, then group
  /// current-tip changes in group registration order.
  ///
  /// - Parameters:
  ///   - rules: slots whose rules must be re-evaluated (their inputs changed).
  ///   - state: slots whose status must be recomputed (invalidation, overrides, cooldown, display count).
  ///   - groups: groups to recompute even if none of their touched tips changed (membership changes).
  func settle(rules: [Int] = [], state: [Int] = [], groups extraGroups: [String] = [], now: Timestamp) -> [Change] {
    // Slots are handled unretained (`slotRefs`): `slots` owns them and nothing here removes one.
    epochCounter &+= 1
    let epoch = epochCounter
    var touched: [Unmanaged<TipSlot>] = []
    touched.reserveCapacity(rules.count + state.count)
    for index in rules {
      guard let ref = slotRefs[index] else { continue }
      unowned(unsafe) let slot = ref.takeUnretainedValue()
      guard slot.mark != epoch else { continue }
      slot.mark = epoch
      slot.rulesHold = slot.rules.holds(now: now) { id in self.slot(id)?.record }
      touched.append(ref)
    }
    for index in state {
      guard let ref = slotRefs[index] else { continue }
      unowned(unsafe) let slot = ref.takeUnretainedValue()
      guard slot.mark != epoch else { continue }
      slot.mark = epoch
      touched.append(ref)
    }
    var needsGroups = !extraGroups.isEmpty
    let gate = cooldownActive(now)
    for ref in touched {
      unowned(unsafe) let slot = ref.takeUnretainedValue()
      updateStatus(slot, cooldownGating: gate, now: now)
      if slot.inGroups { needsGroups = true }
    }

    var groupChanges: [Change] = []
    if needsGroups {
      var groupIDs = Set(extraGroups)
      for ref in touched { groupIDs.formUnion(ref.takeUnretainedValue().groups) }
      let ordered = groupIDs.compactMap { self.groups[$0] }.sorted { $0.position < $1.position }
      for group in ordered {
        // A holdout's counterfactual reads its group's other tips: look at it again whenever the group is.
        for id in group.definition.tipIDs where !holdoutSlots.isEmpty {
          if let slot = slot(id), holdoutSlots.contains(slot.index), slot.mark != epoch {
            slot.mark = epoch
            touched.append(.passUnretained(slot))
          }
        }
        let current = computeCurrent(group)
        guard current != group.current else { continue }
        for id in [group.current, current] {
          if let id, let slot = slot(id), slot.mark != epoch {
            slot.mark = epoch
            touched.append(.passUnretained(slot))
          }
        }
        group.current = current
        groupChanges.append(.groupCurrentTip(groupID: group.definition.id, tipID: current))
      }
    }

    if touched.count > 1 && !Self.isSorted(touched) {
      touched.sort { $0.takeUnretainedValue().index < $1.takeUnretainedValue().index }
    }
    var changes: [Change] = []
    for ref in touched {
      unowned(unsafe) let slot = ref.takeUnretainedValue()
      let shouldDisplay = computeShouldDisplay(slot)
      slot.shouldDisplay = shouldDisplay
      if slot.holdout || slot.exposed, updateExposure(slot, now: now) {
        // A held-out tip whose exposure opened or closed counts as displayed, or as fresh again: its status follows
        // the display frequency as a real tip's would (a closed exposure under a running cooldown reads `pending`).
        updateStatus(slot, cooldownGating: gate, now: now)
      }
      if let reported = slot.reported, reported.shouldDisplay == shouldDisplay, reported.status == slot.status {
        continue
      }
      slot.reported = (slot.status, shouldDisplay)
      changes.append(.tip(slot.state))
    }
    return groupChanges.isEmpty ? changes : changes + groupChanges
  }

  static func isSorted(_ slots: [Unmanaged<TipSlot>]) -> Bool {
    for i in 1..<slots.count where slots[i - 1].takeUnretainedValue().index > slots[i].takeUnretainedValue().index {
      return false
    }
    return true
  }

  /// Status from the cached rule value, invalidation, the schedule, the cooldown and overrides; also group
  /// eligibility and cooldown sensitivity.
  func updateStatus(_ slot: TipSlot, cooldownGating: Bool, now: Timestamp) {
    let effect = overrideEffect(slot)
    let record = slot.record
    // A held-out tip whose counterfactual exposure is open counts as displayed: like a tip on screen, the cooldown
    // another tip's display starts does not take it away (else each display elsewhere would close and reopen it).
    let fresh = record.displayCount == 0 && !slot.ignoresFrequency && !slot.exposed
    let open = slot.schedule?.contains(now) ?? true
    slot.scheduleOpen = open
    if effect.shows {
      slot.status = .available
    } else if let reason = record.invalidationReason {
      slot.status = .invalidated(reason)
    } else if slot.rulesHold && open && !(fresh && cooldownGating) {
      slot.status = .available
    } else {
      slot.status = .pending
    }
    if effect.hides {
      slot.eligible = false
    } else {
      slot.eligible = slot.status == .available
    }
    let isSensitive = record.invalidationReason == nil && slot.rulesHold && fresh && open
    if isSensitive != slot.sensitive {
      slot.sensitive = isSensitive
      if isSensitive { sensitive.insert(slot.index) } else { sensitive.remove(slot.index) }
    }
  }

  /// Overrides first (shown: true, hidden: false); otherwise available, not suppressed, not a holdout and current
  /// in every group holding it.
  func computeShouldDisplay(_ slot: TipSlot) -> Bool {
    let effect = overrideEffect(slot)
    if effect.shows { return true }
    if effect.hides { return false }
    guard slot.status == .available, !suppressionActive, !slot.holdout else { return false }
    guard slot.inGroups else { return true }
    for id in slot.groups where groups[id]?.current != slot.id { return false }
    return true
  }

  /// What `shouldDisplay` would be if a holdout slot were not held out: rules, frequency, schedule, suppression and
  /// its groups all allowing (each group's current tip worked out as if the tip were in play).
  func wouldDisplay(_ slot: TipSlot) -> Bool {
    let effect = overrideEffect(slot)
    if effect.shows { return true }
    if effect.hides { return false }
    guard slot.status == .available, !suppressionActive else { return false }
    for id in slot.groups {
      guard let group = groups[id], computeCurrent(group, inPlay: slot) == slot.id else { return false }
    }
    return true
  }

  /// Opens or closes a holdout's counterfactual exposure (see ``Engine``), writing it; returns whether it did.
  @discardableResult
  func updateExposure(_ slot: TipSlot, now: Timestamp) -> Bool {
    let exposed = slot.holdout && wouldDisplay(slot)
    guard exposed != slot.exposed, let variant = slot.variant else { return false }
    slot.exposed = exposed
    exposures[slot.recordKey] = exposed ? now : nil
    pendingWrites.append(.exposure(tipID: slot.id, variant: variant, since: exposed ? now : nil))
    return true
  }

  /// Whether a follow-on rule's `for` had elapsed at `now` (its tip invalidated at least that long ago).
  func followElapsed(_ follow: FollowKey, now: Timestamp) -> Bool {
    guard let record = slot(follow.tip)?.record, record.invalidationReason != nil else { return false }
    return now >= (record.invalidatedAt ?? now) + follow.duration
  }

  /// The tips whose rules read `tipID`'s record, to evaluate again after it changed (their `for` watches refreshed).
  func followers(of tipID: String, now: Timestamp) -> [Int] {
    guard let dependents = tipDependents[tipID] else { return [] }
    for follow in followWatches.keys where follow.tip == tipID {
      followWatches[follow] = followElapsed(follow, now: now)
    }
    return dependents
  }
}
