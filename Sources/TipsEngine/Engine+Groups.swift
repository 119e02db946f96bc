/// Tip groups (TipKit's TipGroup): registration, membership and the current tip of each.
extension Engine {
  // MARK: - Groups

  /// Registers a group, replacing one with the same id (its position is kept). Its tips may be registered later.
  /// A new group's current tip is always reported once.
  public func registerGroup(_ group: TipGroupDefinition) throws(EngineError) -> Mutation {
    guard !group.id.isEmpty else { throw .invalidArgument(argument: "id", problem: "must not be empty") }
    let now = tick()
    var isNew = false
    var affected: [Int] = []
    if let existing = groups[group.id] {
      for tipID in existing.definition.tipIDs { removeMembership(tipID, group: group.id, affected: &affected) }
      existing.definition = group
    } else {
      groups[group.id] = GroupState(definition: group, position: nextGroupPosition)
      nextGroupPosition += 1
      isNew = true
    }
    groups[group.id]?.open = group.schedule?.contains(now) ?? true
    for tipID in group.tipIDs where !(groupsByTip[tipID] ?? []).contains(group.id) {
      groupsByTip[tipID, default: []].append(group.id)
      if let slot = slot(tipID) {
        slot.groups.append(group.id)
        affected.append(slot.index)
      }
    }
    var changes = settle(state: affected, groups: [group.id], now: now)
    if isNew, let state = groups[group.id] {
      let report = Change.groupCurrentTip(groupID: group.id, tipID: state.current)
      if !changes.contains(report) { changes.append(report) }
    }
    return finish(changes)
  }

  /// Unregisters a group; its tips are no longer constrained by it.
  public func unregisterGroup(_ id: String) throws(EngineError) -> Mutation {
    guard let group = groups[id] else { throw .unknownGroup(id) }
    let now = tick()
    groups[id] = nil
    var affected: [Int] = []
    for tipID in group.definition.tipIDs { removeMembership(tipID, group: id, affected: &affected) }
    return finish(settle(state: affected, now: now))
  }

  /// A registered group's definition.
  public func group(_ id: String) -> TipGroupDefinition? { groups[id]?.definition }

  /// Registered group ids in registration order.
  public var groupIDs: [String] { groups.values.sorted { $0.position < $1.position }.map(\.definition.id) }

  /// The group's current tip (nil when none).
  public func currentTip(ofGroup id: String) throws(EngineError) -> String? {
    guard let group = groups[id] else { throw .unknownGroup(id) }
    return group.current
  }

  // MARK: - Internals: groups

  func removeMembership(_ tipID: String, group: String, affected: inout [Int]) {
    guard var list = groupsByTip[tipID], let position = list.firstIndex(of: group) else { return }
    list.remove(at: position)
    groupsByTip[tipID] = list.isEmpty ? nil : list
    if let slot = slot(tipID) {
      slot.groups.removeAll { $0 == group }
      affected.append(slot.index)
    }
  }

  /// The group's current tip: none outside its schedule. Holdout tips (unless a testing override shows them) are
  /// passed over as if the group did not hold them — the holdout's experience is the flow without the tip — except
  /// `inPlay`, the holdout whose counterfactual is being worked out.
  func computeCurrent(_ group: GroupState, inPlay: TipSlot? = nil) -> String? {
    guard group.open else { return nil }
    func passedOver(_ slot: TipSlot) -> Bool {
      slot.holdout && slot !== inPlay && !overrideEffect(slot).shows
    }
    switch group.definition.priority {
    case .ordered:
      for id in group.definition.tipIDs {
        guard let slot = slot(id), !slot.status.isInvalidated, !passedOver(slot) else { continue }
        return slot.eligible ? id : nil
      }
      return nil
    case .firstAvailable:
      for id in group.definition.tipIDs {
        if let slot = slot(id), slot.eligible, !passedOver(slot) { return id }
      }
      return nil
    }
  }
}
