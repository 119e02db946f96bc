import TipsProtocol

/// `inspect/state` as aligned text (`tipsd inspect`), and the rows `tipsd report` shares.
enum InspectText {
  static func render(_ state: InspectState) -> String {
    var out = "tipsd at \(Format.instant(state.now))\(state.virtualClock ? " (virtual clock)" : "")"
    if state.testing { out += ", testing allowed" }
    out += ", history \(state.history.enabled ? "cursor \(state.history.head)" : "off")\n\n"

    let tips = state.tips.map { tip in
      let held = tip.heldBy.map(describe)
      let why = held.isEmpty ? (tip.lines.count > 1 ? trimmed(tip.lines[1]) : "") : held.joined(separator: "; ")
      return tipCells(tip) + [why]
    }
    out += TextTable.render([["TIP", "VARIANT", "STATUS", "SHOWS", "DISPLAYS", "DISPLAYED", "HELD BY / RULES"]] + tips)
    out += "\n" + TextTable.render([["EVENT", "KEPT", "EVER", "LAST DONATION", "ROLE"]] + state.events.map(eventCells))
    if !state.parameters.isEmpty {
      let parameters = state.parameters.map { parameter in
        [
          parameter.id + (parameter.transient ? " (transient)" : ""), parameter.value.jsonString,
          parameter.defaultValue.jsonString,
        ]
      }
      out += "\n" + TextTable.render([["PARAMETER", "VALUE", "DEFAULT"]] + parameters)
    }
    if !state.groups.isEmpty {
      out += "\n" + TextTable.render([["GROUP", "PRIORITY", "CURRENT TIP", "TIPS"]] + state.groups.map(groupCells))
    }
    let overrides = state.overrides
    var applied: [String] = []
    if overrides.showAll { applied.append("show all") }
    if overrides.hideAll { applied.append("hide all") }
    if !overrides.show.isEmpty { applied.append("show \(overrides.show.joined(separator: ", "))") }
    if !overrides.hide.isEmpty { applied.append("hide \(overrides.hide.joined(separator: ", "))") }
    out += "\noverrides: \(applied.isEmpty ? "none" : applied.joined(separator: "; "))\n"
    return out
  }

  /// Id, variant, status (with the reason), whether it shows, displays and time displayed.
  static func tipCells(_ tip: InspectState.Tip) -> [String] {
    let state = tip.state
    let status = state.status.name + (state.status.reason.map { " (\($0))" } ?? "")
    return [
      state.id, state.variant ?? "-", status, state.shouldDisplay ? "yes" : "no", String(state.displayCount),
      Format.fixed(state.displayedDuration, 1) + " s",
    ]
  }

  /// Id, counts, the last donation and the event's role (a tip's goal, the app-closed event).
  static func eventCells(_ event: InspectState.Event) -> [String] {
    var role = event.goalOf.map { "goal of \($0)" }
    if event.appClosed { role.append("app closed") }
    return [
      event.id, String(event.count), String(event.lifetime), event.lastDonation.map { Format.instant($0.at) } ?? "-",
      role.joined(separator: ", "),
    ]
  }

  static func groupCells(_ group: InspectState.Group) -> [String] {
    [group.id, group.priority, group.currentTip ?? "none", group.tips.joined(separator: ", ")]
  }

  static func describe(_ hold: InspectState.Hold) -> String {
    switch hold {
    case .cooldown(let until): "cooldown until \(Format.instant(until))"
    case .group(let group, let current): "group \(group) (current: \(current ?? "none"))"
    case .override(let name): "override \(name)"
    case .invalidated(let reason): "invalidated (\(reason))"
    case .schedule(let from, let until, let group):
      "\(group.map { "group \($0)'s " } ?? "")schedule \(from.map(Format.instant) ?? "…")–\(until.map(Format.instant) ?? "…")"
        + " is closed"
    case .suppressed(let until, let reason):
      "suppressed until \(until.map(Format.instant) ?? "tips/resume")\(reason.map { " (\($0))" } ?? "")"
    case .holdout(let variant, _): "held out (variant \(variant))"
    }
  }

  static func trimmed(_ text: String) -> String {
    String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
  }
}
