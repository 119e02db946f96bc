/// Testing overrides: show or hide tips regardless of rules (TipKit's precedence).
extension Engine {
  // MARK: - Testing overrides

  /// Applies a testing override: `show(ids)`/`hide(ids)` add to their sets, `showAll`/`hideAll` set a flag,
  /// `clear` clears all four. Precedence: show these > hide these > show all > hide all. Not durable.
  public func setTestingOverride(_ override: TestingOverride) -> Mutation {
    let now = tick()
    var state: [Int] = []
    var everything = false
    switch override {
    case .showAll:
      everything = !showAll
      showAll = true
    case .hideAll:
      everything = !hideAll
      hideAll = true
    case .show(let ids):
      for id in ids where showIDs.insert(id).inserted { if let slot = slot(id) { state.append(slot.index) } }
    case .hide(let ids):
      for id in ids where hideIDs.insert(id).inserted { if let slot = slot(id) { state.append(slot.index) } }
    case .clear:
      everything = showAll || hideAll
      if !everything { state = showIDs.union(hideIDs).compactMap { slot($0)?.index } }
      showAll = false
      hideAll = false
      showIDs = []
      hideIDs = []
    }
    if everything { state = slots.compactMap { $0?.index } }
    return finish(settle(state: state, now: now))
  }

  // MARK: - Internals: overrides

  func updateOverridesActive() {
    hasOverrides = showAll || hideAll || !showIDs.isEmpty || !hideIDs.isEmpty
  }

  func overrideEffect(_ slot: TipSlot) -> OverrideEffect {
    hasOverrides ? overrideEffect(slot.id) : .none
  }

  func overrideEffect(_ id: String) -> OverrideEffect {
    if !hasOverrides { return .none }
    if showIDs.contains(id) { return .show }
    if hideIDs.contains(id) { return .hide }
    if showAll { return .showAll }
    if hideAll { return .hideAll }
    return .none
  }
}
