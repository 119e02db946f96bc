import TipsEngine
import TipsJSON

// Checks of issue #25's keys: tips that follow tips (ids, cycles), schedules that never open, holdouts.

extension Linter {
  /// Every tip rule (`{"tip": …}`) of the catalog's tips and templates as written: the owner's id, the rule's path
  /// and the tip it names.
  static func tipRules(_ decoder: CatalogDecoder) -> [(owner: String?, path: String, tip: String)] {
    var found: [(owner: String?, path: String, tip: String)] = []
    for element in decoder.rawTips + decoder.rawTemplates {
      let owner = element.json["id"]?.stringValue
      forEachRule(in: element.json["rules"], path: "\(element.path).rules") { path, rule, _ in
        guard case .string(let tip)? = rule["tip"], !tip.isEmpty else { return }
        found.append((owner, path, tip))
      }
    }
    return found
  }

  /// A tip rule naming a tip the catalog does not have (nor a template could make) never holds; tips that follow
  /// each other in a cycle never show (and the daemon refuses to register them).
  mutating func checkFollowers(_ catalog: Catalog, _ decoder: CatalogDecoder) {
    let rules = Self.tipRules(decoder)
    guard !rules.isEmpty else { return }
    let ids = Set(decoder.rawTips.compactMap { $0.json["id"]?.stringValue })
    for rule in rules where !ids.contains(rule.tip) {
      if TemplateText.parse(rule.tip)?.contains(where: \.isPlaceholder) == true { continue }
      if catalog.templates.contains(where: { $0.couldMake(id: rule.tip) }) { continue }
      var message = "no tip \"\(rule.tip)\" in this catalog: a rule on a tip that is not registered never holds"
      if let suggestion = Self.nearest(rule.tip, among: ids.sorted()) {
        message += " (did you mean \"\(suggestion)\"?)"
      }
      add(.unknownTip, "\(rule.path).tip", message)
    }
    // Cycles among the catalog's tips (the engine's search), each reported once, at the rule of its first tip that
    // follows the next one.
    var edges: [String: [String]] = [:]
    for tip in catalog.tips { edges[tip.id] = tip.followedTips }
    var rulePaths: [String: String] = [:]
    for rule in rules where rule.path.hasPrefix("tips[") {
      guard let owner = rule.owner, rulePaths["\(owner)\u{1F}\(rule.tip)"] == nil else { continue }
      rulePaths["\(owner)\u{1F}\(rule.tip)"] = rule.path
    }
    var done: Set<String> = []
    var reported: Set<String> = []
    for tip in catalog.tips where !reported.contains(tip.id) {
      guard let cycle = Engine.followCycle(from: tip.id, edges: edges, done: &done), cycle.count > 1,
        !reported.contains(cycle[0])
      else { continue }
      reported.formUnion(cycle)
      let path = rulePaths["\(cycle[0])\u{1F}\(cycle[1])"].map { "\($0).tip" } ?? "tips"
      add(
        .followCycle, path,
        "tips that follow tips form a cycle (\(cycle.joined(separator: " → "))): none of them could ever show, and "
          + "the daemon refuses to register them")
    }
  }

  /// A schedule that never opens: `until` at or before `from`, or a tip's schedule and its group's sharing no
  /// instant.
  mutating func checkSchedules(_ catalog: Catalog, _ decoder: CatalogDecoder) {
    var tipSchedules: [String: (schedule: TipSchedule, path: String)] = [:]
    for (tip, path) in zip(catalog.tips, decoder.tipPaths) {
      guard let schedule = tip.schedule else { continue }
      if schedule.neverOpens {
        add(.schedule, "\(path).schedule", "tip \"\(tip.id)\"'s schedule never opens: until is not after from")
      } else {
        tipSchedules[tip.id] = (schedule, path)
      }
    }
    for (group, path) in zip(catalog.groups, decoder.groupPaths) {
      guard let schedule = group.schedule else { continue }
      if schedule.neverOpens {
        add(.schedule, "\(path).schedule", "group \"\(group.id)\"'s schedule never opens: until is not after from")
        continue
      }
      for (position, id) in group.tipIDs.enumerated() {
        guard let own = tipSchedules[id], own.schedule.intersection(schedule) == nil else { continue }
        add(
          .schedule, "\(path).tips[\(position)]",
          "tip \"\(id)\"'s schedule (\(own.path).schedule) and group \"\(group.id)\"'s share no instant: it never shows"
        )
      }
    }
  }

  /// A holdout on a tip with no other variant holds every install out; one on a tip without a goal has no lift.
  mutating func checkHoldouts(_ catalog: Catalog, _ decoder: CatalogDecoder) {
    for (tip, path) in zip(catalog.tips, decoder.tipPaths) {
      let holdouts = tip.variants.filter(\.holdout)
      guard let first = holdouts.first else { continue }
      if holdouts.count == tip.variants.count {
        add(
          .holdout, "\(path).variants.\(first.name)",
          "tip \"\(tip.id)\" has a holdout but no variant with copy: every install would be held out and nobody "
            + "would see it (add a variant with the tip's copy to compare with)")
      } else if tip.goal == nil {
        add(
          .holdoutWithoutGoal, "\(path).variants.\(first.name)",
          "tip \"\(tip.id)\" has a holdout but no \"goal\": metrics/get has nothing to compare the held-out installs "
            + "on, so it reports no lift")
      }
    }
  }
}
