public import TipsJSON

/// Why a tip is (not) showing: each rule with its current value and the numbers behind it, what else holds the tip
/// back, its display budget and when it may next change on its own.
///
/// `json` is `{"id", "status", "reason"?, "shouldDisplay", "override"?, "rules": [{"rule", "holds", "detail",
/// "rules"?}], "heldBy": [...], "displayCount", "displayedDuration", "nextChangeAt"}`; `heldBy` entries are
/// `{"kind":"cooldown","until":T}`, `{"kind":"group","group":g,"currentTip":x|null}`,
/// `{"kind":"override","override":"hide"|"hideAll"}` and `{"kind":"invalidated","reason":r}`. Overrides outrank
/// everything: a hidden tip lists only its override, a shown one (`"override": "show"|"showAll"`) nothing. `lines`
/// says the same for people.
public struct Explanation: Sendable {
  public var json: JSONValue
  public var lines: [String]

  public init(json: JSONValue, lines: [String]) {
    self.json = json
    self.lines = lines
  }
}

extension Engine {
  /// Explains a registered tip's state.
  public func explain(_ tipID: String) throws(EngineError) -> Explanation {
    guard let slot = slot(tipID) else { throw .unknownTip(tipID) }
    let now = clock.now()
    let state = slot.state
    var lines = ["\(tipID): \(describe(state.status)), shouldDisplay \(state.shouldDisplay)"]
    var object = JSONObject()
    object["id"] = .string(tipID)
    object["status"] = .string(state.status.name)
    if let reason = state.status.reason { object["reason"] = .string(reason.rawValue) }
    object["shouldDisplay"] = .bool(state.shouldDisplay)

    let effect = overrideEffect(tipID)
    if effect.shows {
      object["override"] = .string(effect.name)
      lines.append("  override \(effect.name): shown regardless of rules, display frequency, invalidation and groups")
    } else if effect.hides {
      object["override"] = .string(effect.name)
    }

    var rules: [JSONValue] = []
    if slot.definition.rules.isEmpty {
      lines.append("  rules: none (eligible unless held back)")
    } else {
      let holding = slot.definition.rules.filter { explainRule($0, now: now, depth: 0).holds }.count
      lines.append("  rules: \(holding) of \(slot.definition.rules.count) hold")
      for rule in slot.definition.rules {
        let explained = explainRule(rule, now: now, depth: 2)
        rules.append(explained.json)
        lines += explained.lines
      }
    }
    object["rules"] = .array(rules)

    var heldBy: [JSONValue] = []
    if effect.hides {
      heldBy.append(["kind": "override", "override": .string(effect.name)])
      lines.append("  held by: testing override \(effect.name)")
    }
    // An override decides alone: a hidden tip is held by the override only, a shown one by nothing.
    if case .none = effect {
      if let reason = slot.record.invalidationReason {
        heldBy.append(["kind": "invalidated", "reason": .string(reason.rawValue)])
        lines.append("  held by: invalidated (\(reason.rawValue))")
      } else if slot.record.displayCount == 0 && !slot.ignoresFrequency, let end = cooldownEnd(now) {
        heldBy.append(["kind": "cooldown", "until": JSONDecoding.number(end)])
        lines.append("  held by: \(frequency.rawValue) display-frequency cooldown until \(instant(end))")
      }
      for groupID in slot.groups {
        guard let group = groups[groupID], group.current != tipID else { continue }
        let currentTip: JSONValue = group.current.map { .string($0) } ?? .null
        heldBy.append(["kind": "group", "group": .string(groupID), "currentTip": currentTip])
        let current = group.current.map { "current tip \($0)" } ?? "no current tip"
        lines.append("  held by: group \(groupID) (\(group.definition.priority.rawValue), \(current))")
      }
    }
    object["heldBy"] = .array(heldBy)

    object["displayCount"] = .int(Int64(slot.record.displayCount))
    object["displayedDuration"] = JSONDecoding.number(slot.record.displayedDuration)
    var budget = "  displays: \(slot.record.displayCount)"
    if let max = slot.definition.options.maxDisplayCount { budget += " of \(max)" }
    budget += ", displayed \(format(slot.record.displayedDuration))s"
    if let max = slot.definition.options.maxDisplayDuration { budget += " of \(format(max))s" }
    if slot.ignoresFrequency { budget += ", ignores display frequency" }
    lines.append(budget)

    let next = nextChangeTime(of: slot, now: now)
    object["nextChangeAt"] = next.map(JSONDecoding.number) ?? .null
    lines.append("  next change: \(next.map(instant) ?? "none")")
    return Explanation(json: .object(object), lines: lines)
  }

  /// The earliest instant after now at which this tip may change on its own.
  func nextChangeTime(of slot: TipSlot, now: Timestamp) -> Timestamp? {
    var next: Timestamp?
    for key in slot.dependencies.windows {
      if let exit = logList[key.event].nextExit(within: key.within, now: now) { next = min(next ?? exit, exit) }
    }
    if slot.sensitive, let end = cooldownEnd(now) { next = min(next ?? end, end) }
    return next
  }

  /// One rule (and its sub-rules) with its value and the numbers behind it.
  func explainRule(_ rule: Rule, now: Timestamp, depth: Int) -> (holds: Bool, json: JSONValue, lines: [String]) {
    var object: JSONObject = ["rule": rule.json]
    var nested: [JSONValue] = []
    var nestedLines: [String] = []
    let holds: Bool
    let detail: String
    switch rule {
    case .event(let rule):
      let key = FilterKey(within: rule.within, matching: rule.matching, groupBy: rule.largestGroupBy)
      let count = logs[rule.eventID]?.measure(key, now: now) ?? 0
      holds = rule.countOperator.compare(count, rule.countValue)
      var qualifiers = ""
      if let within = rule.withinJSON?.objectValue?.members.first, let amount = within.value.doubleValue {
        let unit = amount == 1 ? String(within.key.dropLast()) : within.key
        qualifiers += " within \(format(amount)) \(unit)"
      }
      if let matching = rule.matching { qualifiers += " where \(JSONValue.object(matching).jsonString)" }
      if let groupBy = rule.largestGroupBy { qualifiers += " largest group by \(groupBy)" }
      // A plain count reads the lifetime count; windows and filters read the kept history (the newest N).
      let lifetime = key.within == nil && key.matching == nil && key.groupBy == nil
      let kept = logs[rule.eventID].map { limit(of: $0) } ?? configuration.defaultDonationLimit
      object["reads"] = lifetime ? "lifetime" : "history"
      let source = lifetime ? " (lifetime)" : " (of the newest \(kept))"
      detail =
        "\(rule.eventID) count=\(count)\(qualifiers)\(source), needs \(rule.countOperator.symbol) \(rule.countValue)"
    case .parameter(let rule):
      let value = parameters[rule.parameterID]?.value ?? .null
      holds = rule.op.compare(value, rule.value)
      let undefined = parameters[rule.parameterID]?.definition == nil ? " (undefined)" : ""
      detail =
        "parameter \(rule.parameterID)=\(value.jsonString)\(undefined), needs \(rule.op.symbol) \(rule.value.jsonString)"
    case .allOf(let rules), .anyOf(let rules):
      var holding = 0
      for sub in rules {
        let explained = explainRule(sub, now: now, depth: depth + 2)
        if explained.holds { holding += 1 }
        nested.append(explained.json)
        nestedLines += explained.lines
      }
      if case .allOf = rule {
        holds = holding == rules.count
        detail = "allOf: \(holding) of \(rules.count) hold, needs all"
      } else {
        holds = holding > 0
        detail = "anyOf: \(holding) of \(rules.count) hold, needs at least one"
      }
    case .not(let sub):
      let explained = explainRule(sub, now: now, depth: depth + 2)
      holds = !explained.holds
      nested.append(explained.json)
      nestedLines += explained.lines
      detail = explained.holds ? "not: the inner rule holds" : "not: the inner rule does not hold"
    }
    object["holds"] = .bool(holds)
    object["detail"] = .string(detail)
    if !nested.isEmpty || rule.isCompound { object["rules"] = .array(nested) }
    let indent = String(repeating: " ", count: depth)
    return (holds, .object(object), ["\(indent)[\(holds ? "ok" : "no")] \(detail)"] + nestedLines)
  }

  func describe(_ status: TipStatus) -> String {
    if let reason = status.reason { return "invalidated (\(reason.rawValue))" }
    return status.name
  }

  /// An instant for people reading `lines`.
  func instant(_ timestamp: Timestamp) -> String { ISO8601.string(from: timestamp) }

  /// A number without a trailing `.0` when integral.
  func format(_ value: Double) -> String {
    if let exact = Int64(exactly: value) { return String(exact) }
    return String(value)
  }
}

extension Rule {
  var isCompound: Bool {
    switch self {
    case .event, .parameter: false
    case .allOf, .anyOf, .not: true
    }
  }
}
