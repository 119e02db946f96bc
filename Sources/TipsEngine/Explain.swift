public import TipsJSON

/// Why a tip is (not) showing: each rule with its current value and the numbers behind it, what else holds the tip
/// back, its display budget and when it may next change on its own.
///
/// `json` is `{"id", "status", "reason"?, "shouldDisplay", "override"?, "rules": [{"rule", "holds", "detail",
/// "rules"?}], "heldBy": [...], "displayCount", "displayedDuration", "nextChangeAt"}`; `heldBy` entries are
/// `{"kind":"cooldown","until":T}`, `{"kind":"group","group":g,"currentTip":x|null}`,
/// `{"kind":"override","override":"hide"|"hideAll"}`, `{"kind":"invalidated","reason":r}`,
/// `{"kind":"schedule","from":T|null,"until":T|null,"group"?:g}` (the tip's schedule, or its group's, is closed),
/// `{"kind":"suppressed","until":T|null,"reason":r|null}` and `{"kind":"holdout","variant":v,"exposedSince":T|null}`
/// (this install is held out; `exposedSince` is the open counterfactual exposure). Overrides outrank everything: a
/// hidden tip lists only its override, a shown one (`"override": "show"|"showAll"`) nothing. `lines` says the same
/// for people.
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
      } else if let schedule = slot.definition.schedule, !schedule.contains(now) {
        heldBy.append(Self.scheduleJSON(schedule, group: nil))
        lines.append("  held by: schedule \(describe(schedule)) (closed now)")
      } else if slot.record.displayCount == 0 && !slot.ignoresFrequency, let end = cooldownEnd(now) {
        heldBy.append(["kind": "cooldown", "until": JSONDecoding.number(end)])
        lines.append("  held by: \(frequency.rawValue) display-frequency cooldown until \(instant(end))")
      }
      if suppressionActive, let suppression {
        heldBy.append([
          "kind": "suppressed", "until": suppression.until.map(JSONDecoding.number) ?? .null,
          "reason": suppression.reason.map { .string($0) } ?? .null,
        ])
        let until = suppression.until.map { "until \(instant($0))" } ?? "until tips/resume"
        let reason = suppression.reason.map { " (\($0))" } ?? ""
        lines.append("  held by: tips suppressed \(until)\(reason)")
      }
      if slot.holdout, let variant = slot.variant {
        let since = exposures[slot.recordKey]
        heldBy.append([
          "kind": "holdout", "variant": .string(variant), "exposedSince": since.map(JSONDecoding.number) ?? .null,
        ])
        let counterfactual =
          since.map { "; it would show now (counterfactual exposure since \(instant($0)))" } ?? ""
        lines.append("  held by: holdout variant \(variant): this install never sees the tip\(counterfactual)")
      }
      for groupID in slot.groups {
        guard let group = groups[groupID], group.current != tipID else { continue }
        if let schedule = group.definition.schedule, !group.open {
          heldBy.append(Self.scheduleJSON(schedule, group: groupID))
          lines.append("  held by: group \(groupID)'s schedule \(describe(schedule)) (closed now)")
          continue
        }
        if slot.holdout { continue }
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
    func consider(_ instant: Timestamp?) {
      guard let instant, instant > now else { return }
      next = min(next ?? instant, instant)
    }
    let dependencies = dependencies(of: slot)
    for key in dependencies.windows { consider(logList[key.event].nextExit(within: key.within, now: now)) }
    for log in dependencies.events {
      if let maxAge = log.maxAge { consider(log.nextExit(within: maxAge, now: now)) }
    }
    if slot.sensitive { consider(cooldownEnd(now)) }
    if suppressionActive { consider(suppression?.until) }
    consider(slot.definition.schedule?.nextBoundary(after: now))
    for id in slot.groups { consider(groups[id]?.definition.schedule?.nextBoundary(after: now)) }
    for follow in dependencies.follows where followWatches[follow] == false {
      guard let record = self.slot(follow.tip)?.record, record.invalidationReason != nil else { continue }
      consider((record.invalidatedAt ?? now) + follow.duration)
    }
    return next
  }

  static func scheduleJSON(_ schedule: TipSchedule, group: String?) -> JSONValue {
    var object: JSONObject = [
      "kind": "schedule", "from": schedule.from.map(JSONDecoding.number) ?? .null,
      "until": schedule.until.map(JSONDecoding.number) ?? .null,
    ]
    if let group { object["group"] = .string(group) }
    return .object(object)
  }

  func describe(_ schedule: TipSchedule) -> String {
    let from = schedule.from.map { "from \(instant($0))" }
    let until = schedule.until.map { "until \(instant($0))" }
    return [from, until].compactMap { $0 }.joined(separator: " ")
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
      // A plain count reads the lifetime count; windows and filters read the kept history (the newest N), and so
      // does every rule of an event with a maximum age (the donations younger than it).
      let maxAge = logs[rule.eventID]?.maxAge
      let lifetime = key.within == nil && key.matching == nil && key.groupBy == nil && maxAge == nil
      let kept = logs[rule.eventID].map { limit(of: $0) } ?? configuration.defaultDonationLimit
      object["reads"] = lifetime ? "lifetime" : "history"
      var source = lifetime ? " (lifetime)" : " (of the newest \(kept))"
      if let maxAge { source = " (of the newest \(kept) younger than \(ageWords(maxAge)))" }
      detail =
        "\(rule.eventID) count=\(count)\(qualifiers)\(source), needs \(rule.countOperator.symbol) \(rule.countValue)"
    case .tip(let rule):
      let target = slot(rule.tipID)
      holds = rule.holds(target?.record, now: now)
      switch rule.condition {
      case .invalidated(let duration):
        let needs = duration.map { "invalidated for at least \(ageWords($0))" } ?? "invalidated"
        if let record = target?.record, let reason = record.invalidationReason {
          let at = record.invalidatedAt.map { " at \(instant($0))" } ?? ""
          let elapsed = record.invalidatedAt.map { ", \(format(now - $0))s ago" } ?? ""
          detail = "tip \(rule.tipID) invalidated (\(reason.rawValue))\(at)\(elapsed), needs \(needs)"
        } else {
          let state = target == nil ? "is not registered" : "is not invalidated"
          detail = "tip \(rule.tipID) \(state), needs \(needs)"
        }
      case .displayed(let op, let count):
        if let record = target?.record {
          detail = "tip \(rule.tipID) displayed \(record.displayCount) times, needs \(op.symbol) \(count)"
        } else {
          detail = "tip \(rule.tipID) is not registered (never holds), needs displayed \(op.symbol) \(count)"
        }
      }
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

  /// A duration in its largest exact unit: "1 day", "90 minutes".
  func ageWords(_ seconds: Double) -> String {
    guard let (unit, amount) = EventRule.durationJSON(seconds).objectValue?.members.first,
      let value = amount.doubleValue
    else { return "\(format(seconds))s" }
    return "\(format(value)) \(value == 1 ? String(unit.dropLast()) : unit)"
  }

  /// A number without a trailing `.0` when integral.
  func format(_ value: Double) -> String {
    if let exact = Int64(exactly: value) { return String(exact) }
    return String(value)
  }
}

extension Rule {
  var isCompound: Bool {
    switch self {
    case .event, .parameter, .tip: false
    case .allOf, .anyOf, .not: true
    }
  }
}
