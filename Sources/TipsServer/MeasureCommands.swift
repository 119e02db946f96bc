#if canImport(Glibc)
  import Glibc
#endif
import TipsClient
import TipsJSON

// `tipsd metrics`, `tipsd inspect` and `tipsd report`: the metrics, the inspector's view and a static report, from
// a running daemon over its socket (the JSON-RPC methods `metrics/get` and `inspect/state`).

/// Options every measuring command shares: where the daemon is.
struct DaemonAddress {
  var socketPath: String
  var timeout = 10.0

  /// Connects and initializes.
  func connect(name: String) throws(ClientError) -> JSONRPCClient {
    let client = try JSONRPCClient(socketPath: socketPath, framing: .newline, timeout: timeout)
    do {
      try client.initialize(name: name, version: TipsdVersion.server)
    } catch {
      client.close()
      throw error
    }
    return client
  }
}

/// Parses `--since`/`--until` values: seconds since the epoch, or a span back from the daemon's now (`90s`, `30m`,
/// `24h`, `7d`, `2w`).
enum SinceParser {
  static func instant(_ text: String, now: Double) -> Double? {
    if let seconds = Double(text), seconds.isFinite { return seconds }
    guard let unit = text.last, let amount = Double(text.dropLast()), amount.isFinite, amount >= 0 else { return nil }
    let scale: Double
    switch unit {
    case "s": scale = 1
    case "m": scale = 60
    case "h": scale = 3_600
    case "d": scale = 86_400
    case "w": scale = 604_800
    default: return nil
    }
    return now - amount * scale
  }
}

// MARK: - tipsd metrics

enum MetricsCommand {
  static let usage = """
    usage: tipsd metrics [--socket PATH] [--since WHEN] [--until WHEN] [--tips ID,ID] [--json | --csv]
      WHEN: seconds since the epoch, or a span back from the daemon's clock: 90s, 30m, 24h, 7d, 2w
    """

  static func run(_ args: [String], environment: [String: String]) -> Int32 {
    var address = DaemonAddress(socketPath: TipsdCommand.defaultSocketPath(environment: environment))
    var since: String?
    var until: String?
    var tips: [String]?
    var format = "table"
    var index = 0
    while index < args.count {
      let flag = args[index]
      func value() -> String? {
        index += 1
        return index < args.count ? args[index] : nil
      }
      switch flag {
      case "--socket": address.socketPath = value() ?? address.socketPath
      case "--since": since = value()
      case "--until": until = value()
      case "--tips": tips = value()?.split(separator: ",").map(String.init)
      case "--json": format = "json"
      case "--csv": format = "csv"
      case "--help", "-h":
        print(usage)
        return 0
      default:
        writeStderr(usage + "\n")
        return 2
      }
      index += 1
    }
    do {
      let client = try address.connect(name: "tipsd metrics")
      defer { client.close() }
      let now = try client.result("clock/now")["now"]?.doubleValue ?? SystemTime.now()
      var params: JSONObject = [:]
      for (name, text) in [("since", since), ("until", until)] {
        guard let text else { continue }
        guard let instant = SinceParser.instant(text, now: now) else {
          writeStderr("tipsd metrics: --\(name) \(text): expected seconds since the epoch or a span like 7d, 24h\n")
          return 2
        }
        params[name] = .double(instant)
      }
      if let tips { params["tips"] = .array(tips.map { .string($0) }) }
      let reply = try client.call("metrics/get", .object(params))
      guard let report = reply["result"] else {
        writeStderr("tipsd metrics: \(reply["error"]?["message"]?.stringValue ?? reply.jsonString)\n")
        return 1
      }
      switch format {
      case "json": print(report.prettyString())
      case "csv": print(MetricsTable.csv(report), terminator: "")
      default: print(MetricsTable.text(report), terminator: "")
      }
      return 0
    } catch {
      writeStderr("tipsd metrics: \(error)\n")
      return 1
    }
  }
}

/// The metrics report as rows: one per tip (`all`) and one per variant.
enum MetricsTable {
  static let columns = [
    "tip", "variant", "impressions", "goal_rate", "goal_converted", "goal_decided", "goal_pending",
    "median_time_to_goal_s", "time_to_goal_samples", "close_rate", "closes", "close_decided", "close_alert",
    "goal_per_day_before", "goal_per_day_after", "goal_rate_change",
  ]

  /// Raw values per row (empty: not applicable).
  static func rows(_ report: JSONValue) -> [[String]] {
    var rows: [[String]] = []
    for tip in report["tips"]?.arrayValue ?? [] {
      let id = tip["tipId"]?.stringValue ?? "?"
      var sets: [(String, JSONValue)] = [("all", tip["overall"] ?? .null)]
      for variant in tip["variants"]?.arrayValue ?? [] { sets.append((variant["variant"]?.stringValue ?? "?", variant)) }
      for (name, set) in sets {
        func raw(_ value: JSONValue?) -> String {
          guard let value, !value.isNull else { return "" }
          if let int = value.intValue { return String(int) }
          if let double = value.doubleValue { return String(double) }
          if let bool = value.boolValue { return bool ? "true" : "false" }
          return value.stringValue ?? value.jsonString
        }
        let goal = set["goal"]
        let time = set["timeToGoal"]
        let close = set["close"]
        let rate = set["goalRate"]
        let available = close?["available"]?.boolValue == true
        rows.append([
          id, name, raw(set["impressions"]), raw(goal?["rate"]), raw(goal?["converted"]), raw(goal?["decided"]),
          raw(goal?["pending"]), raw(time?["median"]), raw(time?["samples"]), available ? raw(close?["rate"]) : "",
          available ? raw(close?["closes"]) : "", available ? raw(close?["decided"]) : "",
          available ? raw(close?["alert"]) : "", raw(rate?["before"]?["perDay"]), raw(rate?["after"]?["perDay"]),
          raw(rate?["change"]),
        ])
      }
    }
    return rows
  }

  static func csv(_ report: JSONValue) -> String {
    func field(_ text: String) -> String {
      text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" })
        ? "\"" + text.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\"" : text
    }
    return ([columns] + rows(report)).map { $0.map(field).joined(separator: ",") }.joined(separator: "\n") + "\n"
  }

  /// An aligned table for people: rates as percentages with their sample sizes.
  static func text(_ report: JSONValue) -> String {
    var table: [[String]] = [["TIP", "VARIANT", "IMPR", "GOAL", "TIME TO GOAL", "CLOSE", "GOAL/DAY BEFORE→AFTER"]]
    for row in rows(report) {
      let goal = row[3].isEmpty ? (row[4].isEmpty ? "—" : "— (n=0)") : "\(percent(row[3])) (\(row[4])/\(row[5]))"
      let time = row[7].isEmpty ? (row[8].isEmpty ? "—" : "— (n=0)") : "\(duration(row[7])) (n=\(row[8]))"
      let close =
        row[10].isEmpty
        ? (row[11].isEmpty ? "n/a" : "— (n=0)")
        : "\(row[9].isEmpty ? "—" : percent(row[9])) (\(row[10])/\(row[11]))\(row[12] == "true" ? " ALERT" : "")"
      let change = row[13].isEmpty && row[14].isEmpty ? "—" : "\(perDay(row[13])) → \(perDay(row[14]))"
      table.append([row[0], row[1], row[2], goal, time, close, change])
    }
    var out = Aligned.table(table)
    if report["appClosedEvent"]?.isNull ?? true {
      out += "close rate: n/a (start the daemon with --app-closed-event NAME)\n"
    }
    return out
  }

  static func percent(_ text: String) -> String {
    guard let value = Double(text) else { return text }
    return Format.fixed(value * 100, value < 0.1 && value > 0 ? 1 : 0) + "%"
  }

  static func perDay(_ text: String) -> String {
    guard let value = Double(text) else { return "—" }
    return Format.fixed(value, 2)
  }

  static func duration(_ text: String) -> String {
    guard let seconds = Double(text) else { return text }
    if seconds < 120 { return Format.fixed(seconds, 0) + " s" }
    if seconds < 7_200 { return Format.fixed(seconds / 60, 0) + " min" }
    if seconds < 172_800 { return Format.fixed(seconds / 3_600, 1) + " h" }
    return Format.fixed(seconds / 86_400, 1) + " d"
  }
}

/// Number formatting without Foundation.
enum Format {
  /// `value` with exactly `digits` decimals (rounded half away from zero).
  static func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "—" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int64(scaled / scale)
    let fraction = Int64(scaled - Double(whole) * scale)
    let sign = value < 0 && scaled > 0 ? "-" : ""
    guard digits > 0 else { return sign + String(whole) }
    let digitsText = String(fraction)
    return sign + String(whole) + "." + String(repeating: "0", count: max(0, digits - digitsText.count)) + digitsText
  }

  /// An integer padded with zeros to `width`.
  static func padded(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }

  static func trimmed(_ text: String) -> String {
    String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
  }
}

/// Aligned plain-text tables.
enum Aligned {
  static func table(_ rows: [[String]]) -> String {
    var widths: [Int] = []
    for row in rows {
      for (index, cell) in row.enumerated() {
        if index >= widths.count { widths.append(0) }
        widths[index] = max(widths[index], cell.count)
      }
    }
    var out = ""
    for row in rows {
      var line = ""
      for (index, cell) in row.enumerated() {
        line += index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count + 2)
      }
      out += line + "\n"
    }
    return out
  }
}

// MARK: - tipsd inspect

enum InspectCommand {
  static let usage = "usage: tipsd inspect [--socket PATH] [--watch] [--json]"

  static func run(_ args: [String], environment: [String: String]) -> Int32 {
    var address = DaemonAddress(socketPath: TipsdCommand.defaultSocketPath(environment: environment))
    var watch = false
    var json = false
    var index = 0
    while index < args.count {
      switch args[index] {
      case "--socket" where index + 1 < args.count:
        index += 1
        address.socketPath = args[index]
      case "--watch": watch = true
      case "--json": json = true
      case "--help", "-h":
        print(usage)
        return 0
      default:
        writeStderr(usage + "\n")
        return 2
      }
      index += 1
    }
    let terminal = isatty(STDOUT_FILENO) == 1
    func show(_ state: JSONValue) {
      if json {
        print(watch ? state.jsonString : state.prettyString())
      } else {
        // On a terminal each redraw replaces the last; otherwise (a pipe, a file) each view follows the last.
        if terminal && watch { print("\u{1B}[H\u{1B}[2J", terminator: "") }
        print(InspectText.render(state), terminator: watch && !terminal ? "\n" : "")
      }
      fflush(nil)
    }
    guard watch else {
      do {
        let client = try address.connect(name: "tipsd inspect")
        defer { client.close() }
        show(try client.result("inspect/state"))
        return 0
      } catch {
        writeStderr("tipsd inspect: \(error)\n")
        return 1
      }
    }
    // --watch: redraw after each inspect/changed; when the daemon goes away (a restart), reconnect and go on.
    var delay = 0.25
    var announced = false
    while true {
      do {
        let client = try address.connect(name: "tipsd inspect --watch")
        defer { client.close() }
        if announced { writeStderr("tipsd inspect: reconnected\n") }
        announced = false
        delay = 0.25
        while true {
          show(try client.result("inspect/state", ["watch": true]))
          var changed: JSONValue?
          while changed == nil {
            changed = try client.nextNotification("inspect/changed", timeout: 3_600)
            if changed == nil && client.atEndOfInput { throw ClientError("the daemon closed the connection") }
          }
        }
      } catch {
        if !announced {
          writeStderr("tipsd inspect: \(error); reconnecting\n")
          announced = true
        }
        usleep(useconds_t(delay * 1_000_000))
        delay = min(delay * 2, 5)
      }
    }
  }
}

/// `inspect/state` as aligned text.
enum InspectText {
  static func render(_ state: JSONValue) -> String {
    var out = ""
    let now = state["now"]?.doubleValue ?? 0
    let clock = state["virtualClock"]?.boolValue == true ? " (virtual clock)" : ""
    let history = state["history"]
    out += "tipsd at \(Timestamps.iso(now))\(clock)"
    if state["testing"]?.boolValue == true { out += ", testing allowed" }
    out += ", history \(history?["enabled"]?.boolValue == true ? "cursor \(history?["head"]?.intValue ?? 0)" : "off")\n\n"

    var tips: [[String]] = [["TIP", "VARIANT", "STATUS", "SHOWS", "DISPLAYS", "DISPLAYED", "HELD BY / RULES"]]
    for tip in state["tips"]?.arrayValue ?? [] {
      let status = (tip["status"]?.stringValue ?? "?") + (tip["reason"]?.stringValue.map { " (\($0))" } ?? "")
      let held = (tip["heldBy"]?.arrayValue ?? []).map(describeHold)
      let lines = tip["lines"]?.arrayValue?.compactMap(\.stringValue) ?? []
      let why = held.isEmpty ? (lines.count > 1 ? Format.trimmed(lines[1]) : "") : held.joined(separator: "; ")
      tips.append([
        tip["id"]?.stringValue ?? "?", tip["variant"]?.stringValue ?? "-", status,
        tip["shouldDisplay"]?.boolValue == true ? "yes" : "no", String(tip["displayCount"]?.intValue ?? 0),
        Format.fixed(tip["displayedDuration"]?.doubleValue ?? 0, 1) + " s", why,
      ])
    }
    out += Aligned.table(tips) + "\n"

    var events: [[String]] = [["EVENT", "KEPT", "EVER", "LAST DONATION", "ROLE"]]
    for event in state["events"]?.arrayValue ?? [] {
      var role = (event["goalOf"]?.arrayValue ?? []).compactMap(\.stringValue).map { "goal of \($0)" }
      if event["appClosed"]?.boolValue == true { role.append("app closed") }
      let last = event["lastDonation"]?["at"]?.doubleValue.map(Timestamps.iso) ?? "-"
      events.append([
        event["id"]?.stringValue ?? "?", String(event["count"]?.intValue ?? 0), String(event["lifetime"]?.intValue ?? 0),
        last, role.joined(separator: ", "),
      ])
    }
    out += Aligned.table(events)

    let parameters = state["parameters"]?.arrayValue ?? []
    if !parameters.isEmpty {
      var rows: [[String]] = [["PARAMETER", "VALUE", "DEFAULT"]]
      for p in parameters {
        rows.append([
          (p["id"]?.stringValue ?? "?") + (p["transient"]?.boolValue == true ? " (transient)" : ""),
          p["value"]?.jsonString ?? "null", p["default"]?.jsonString ?? "null",
        ])
      }
      out += "\n" + Aligned.table(rows)
    }
    let groups = state["groups"]?.arrayValue ?? []
    if !groups.isEmpty {
      var rows: [[String]] = [["GROUP", "PRIORITY", "CURRENT TIP", "TIPS"]]
      for g in groups {
        rows.append([
          g["id"]?.stringValue ?? "?", g["priority"]?.stringValue ?? "?", g["currentTip"]?.stringValue ?? "none",
          (g["tips"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", "),
        ])
      }
      out += "\n" + Aligned.table(rows)
    }
    let o = state["overrides"]
    var overrides: [String] = []
    if o?["showAll"]?.boolValue == true { overrides.append("show all") }
    if o?["hideAll"]?.boolValue == true { overrides.append("hide all") }
    for (key, label) in [("show", "show"), ("hide", "hide")] {
      let ids = (o?[key]?.arrayValue ?? []).compactMap(\.stringValue)
      if !ids.isEmpty { overrides.append("\(label) \(ids.joined(separator: ", "))") }
    }
    out += "\noverrides: \(overrides.isEmpty ? "none" : overrides.joined(separator: "; "))\n"
    return out
  }

  static func describeHold(_ hold: JSONValue) -> String {
    switch hold["kind"]?.stringValue {
    case "cooldown": return "cooldown until \(Timestamps.iso(hold["until"]?.doubleValue ?? 0))"
    case "group": return "group \(hold["group"]?.stringValue ?? "?") (current: \(hold["currentTip"]?.stringValue ?? "none"))"
    case "override": return "override \(hold["override"]?.stringValue ?? "?")"
    case "invalidated": return "invalidated (\(hold["reason"]?.stringValue ?? "?"))"
    default: return hold["kind"]?.stringValue ?? "?"
    }
  }
}

/// UTC instants as ISO 8601.
enum Timestamps {
  static func iso(_ seconds: Double) -> String {
    var time = time_t(seconds.rounded(.down))
    var parts = tm()
    gmtime_r(&time, &parts)
    let p = Format.padded
    return "\(p(Int(parts.tm_year) + 1900, 4))-\(p(Int(parts.tm_mon) + 1, 2))-\(p(Int(parts.tm_mday), 2))T"
      + "\(p(Int(parts.tm_hour), 2)):\(p(Int(parts.tm_min), 2)):\(p(Int(parts.tm_sec), 2))Z"
  }
}

// MARK: - tipsd report

enum ReportCommand {
  static let usage = "usage: tipsd report --html FILE [--socket PATH] [--since WHEN] [--until WHEN]"

  static func run(_ args: [String], environment: [String: String]) -> Int32 {
    var address = DaemonAddress(socketPath: TipsdCommand.defaultSocketPath(environment: environment))
    var file: String?
    var since: String?
    var until: String?
    var index = 0
    while index < args.count {
      let flag = args[index]
      guard flag != "--help" && flag != "-h" else {
        print(usage)
        return 0
      }
      guard index + 1 < args.count else {
        writeStderr(usage + "\n")
        return 2
      }
      index += 1
      switch flag {
      case "--html": file = args[index]
      case "--socket": address.socketPath = args[index]
      case "--since": since = args[index]
      case "--until": until = args[index]
      default:
        writeStderr(usage + "\n")
        return 2
      }
      index += 1
    }
    guard let file else {
      writeStderr(usage + "\n")
      return 2
    }
    do {
      let client = try address.connect(name: "tipsd report")
      defer { client.close() }
      let state = try client.result("inspect/state")
      let now = state["now"]?.doubleValue ?? SystemTime.now()
      var params: JSONObject = [:]
      for (name, text) in [("since", since), ("until", until)] {
        guard let text else { continue }
        guard let instant = SinceParser.instant(text, now: now) else {
          writeStderr("tipsd report: --\(name) \(text): expected seconds since the epoch or a span like 7d, 24h\n")
          return 2
        }
        params[name] = .double(instant)
      }
      let metrics = try client.result("metrics/get", .object(params))
      let html = ReportHTML.render(state: state, metrics: metrics)
      guard let handle = fopen(file, "w") else {
        writeStderr("tipsd report: cannot write \(file): \(String(cString: strerror(errno)))\n")
        return 1
      }
      let bytes = Array(html.utf8)
      let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, handle) }
      let closed = fclose(handle)
      guard written == bytes.count, closed == 0 else {
        writeStderr("tipsd report: cannot write \(file)\n")
        return 1
      }
      print("wrote \(file)")
      return 0
    } catch {
      writeStderr("tipsd report: \(error)\n")
      return 1
    }
  }
}

/// A self-contained static report: inline CSS and SVG, no script, no external resource.
enum ReportHTML {
  static func escape(_ text: String) -> String {
    var out = ""
    for character in text {
      switch character {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&#39;"
      default: out.append(character)
      }
    }
    return out
  }

  /// A table; a cell's line breaks are kept.
  static func table(_ rows: [[String]]) -> String {
    guard let header = rows.first else { return "" }
    func cell(_ text: String) -> String {
      text.split(separator: "\n", omittingEmptySubsequences: false).map { escape(String($0)) }.joined(separator: "<br>")
    }
    var out = "<table><thead><tr>" + header.map { "<th>\(escape($0))</th>" }.joined() + "</tr></thead><tbody>"
    for row in rows.dropFirst() { out += "<tr>" + row.map { "<td>\(cell($0))</td>" }.joined() + "</tr>" }
    return out + "</tbody></table>\n"
  }

  static func render(state: JSONValue, metrics: JSONValue) -> String {
    let now = state["now"]?.doubleValue ?? 0
    var html = """
      <!doctype html>
      <html lang="en"><head><meta charset="utf-8">
      <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
      <title>tipsd report \(escape(Timestamps.iso(now)))</title>
      <style>
      body { font: 14px/1.4 system-ui, sans-serif; margin: 20px; color: #1d1d1f; }
      table { border-collapse: collapse; margin: 6px 0 16px; }
      th, td { text-align: left; padding: 3px 10px; border-bottom: 1px solid #d2d2d7; vertical-align: top; }
      th { color: #6e6e73; font-size: 12px; }
      .card { display: inline-block; vertical-align: top; background: #f5f5f7; border-radius: 10px; padding: 10px 12px;
        margin: 0 12px 12px 0; }
      .muted { color: #6e6e73; font-size: 12px; }
      .alert { color: #cf222e; font-weight: 600; }
      pre { margin: 0; font-size: 12px; }
      svg text { font: 11px system-ui, sans-serif; }
      </style></head><body>
      <h1>tipsd report</h1>
      <p class="muted">Generated \(escape(Timestamps.iso(now)))\(state["virtualClock"]?.boolValue == true ? " (virtual clock)" : "") by tipsd \(escape(TipsdVersion.server)).</p>

      """
    html += "<h2>Did it help?</h2>\n"
    if metrics["appClosedEvent"]?.isNull ?? true {
      html += "<p class=\"muted\">Close rate unavailable: the daemon runs without --app-closed-event.</p>\n"
    }
    for tip in metrics["tips"]?.arrayValue ?? [] {
      let id = tip["tipId"]?.stringValue ?? "?"
      var rows = tip["variants"]?.arrayValue ?? []
      if rows.isEmpty, case .object(var overall)? = tip["overall"] {
        overall["variant"] = "all"
        rows = [.object(overall)]
      }
      let alert = tip["overall"]?["close"]?["alert"]?.boolValue == true
      html += "<div class=\"card\"><strong>\(escape(id))</strong>"
      if let goal = tip["goal"], !goal.isNull {
        html += " <span class=\"muted\">goal: \(escape(goal["event"]?.stringValue ?? "?"))</span>"
      }
      if alert { html += "<div class=\"alert\">close rate over the alert</div>" }
      html += chart(rows) + "</div>\n"
    }
    html += table(
      [["tip", "variant", "impressions", "goal", "time to goal", "close", "goal/day before → after"]]
        + Self.metricRows(metrics))

    html += "<h2>Tips</h2>\n"
    var tipRows: [[String]] = [["tip", "variant", "status", "shouldDisplay", "displays", "displayed", "why"]]
    for tip in state["tips"]?.arrayValue ?? [] {
      tipRows.append([
        tip["id"]?.stringValue ?? "?", tip["variant"]?.stringValue ?? "-",
        (tip["status"]?.stringValue ?? "?") + (tip["reason"]?.stringValue.map { " (\($0))" } ?? ""),
        tip["shouldDisplay"]?.boolValue == true ? "yes" : "no", String(tip["displayCount"]?.intValue ?? 0),
        Format.fixed(tip["displayedDuration"]?.doubleValue ?? 0, 1) + " s",
        (tip["lines"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: "\n"),
      ])
    }
    html += table(tipRows)
    html += "<h2>Events</h2>\n"
    var eventRows: [[String]] = [["event", "kept", "ever", "last donation", "role"]]
    for event in state["events"]?.arrayValue ?? [] {
      var role = (event["goalOf"]?.arrayValue ?? []).compactMap(\.stringValue).map { "goal of \($0)" }
      if event["appClosed"]?.boolValue == true { role.append("app closed") }
      eventRows.append([
        event["id"]?.stringValue ?? "?", String(event["count"]?.intValue ?? 0), String(event["lifetime"]?.intValue ?? 0),
        event["lastDonation"]?["at"]?.doubleValue.map(Timestamps.iso) ?? "-", role.joined(separator: ", "),
      ])
    }
    html += table(eventRows)
    var parameterRows: [[String]] = [["parameter", "value", "default"]]
    for p in state["parameters"]?.arrayValue ?? [] {
      parameterRows.append([p["id"]?.stringValue ?? "?", p["value"]?.jsonString ?? "null", p["default"]?.jsonString ?? "null"])
    }
    if parameterRows.count > 1 { html += "<h2>Parameters</h2>\n" + table(parameterRows) }
    var groupRows: [[String]] = [["group", "priority", "current tip", "tips"]]
    for g in state["groups"]?.arrayValue ?? [] {
      groupRows.append([
        g["id"]?.stringValue ?? "?", g["priority"]?.stringValue ?? "?", g["currentTip"]?.stringValue ?? "none",
        (g["tips"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", "),
      ])
    }
    if groupRows.count > 1 { html += "<h2>Groups</h2>\n" + table(groupRows) }
    return html + "</body></html>\n"
  }

  static func metricRows(_ metrics: JSONValue) -> [[String]] {
    MetricsTable.rows(metrics).map { row in
      [
        row[0], row[1], row[2],
        row[3].isEmpty ? "—" : "\(MetricsTable.percent(row[3])) (\(row[4])/\(row[5]))",
        row[7].isEmpty ? "—" : "\(MetricsTable.duration(row[7])) (n=\(row[8]))",
        row[10].isEmpty ? "n/a" : "\(row[9].isEmpty ? "—" : MetricsTable.percent(row[9])) (\(row[10])/\(row[11]))",
        row[13].isEmpty && row[14].isEmpty ? "—" : "\(MetricsTable.perDay(row[13])) → \(MetricsTable.perDay(row[14]))",
      ]
    }
  }

  /// Goal rate and close rate bars per variant, as inline SVG.
  static func chart(_ rows: [JSONValue]) -> String {
    let width = 320.0
    let left = 80.0
    let scale = width - left - 60
    let rowHeight = 34.0
    var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(Double(rows.count) * rowHeight + 6))\">"
    for (index, row) in rows.enumerated() {
      let y = Double(index) * rowHeight + 4
      let goal = row["goal"]?["rate"]?.doubleValue
      let closeAvailable = row["close"]?["available"]?.boolValue == true
      let close = closeAvailable ? row["close"]?["rate"]?.doubleValue : nil
      let alert = row["close"]?["alert"]?.boolValue == true
      let goalLabel = goal.map { "\(MetricsTable.percent(String($0))) n=\(row["goal"]?["decided"]?.intValue ?? 0)" } ?? "—"
      let closeLabel =
        closeAvailable ? "\(close.map { MetricsTable.percent(String($0)) } ?? "—") n=\(row["close"]?["decided"]?.intValue ?? 0)" : "n/a"
      let goalWidth = max(1, (goal ?? 0) * scale)
      let closeWidth = max(1, (close ?? 0) * scale)
      svg += "<text x=\"0\" y=\"\(Format.fixed(y + 18, 1))\">\(escape(row["variant"]?.stringValue ?? "all"))</text>"
      svg += "<rect x=\"\(left)\" y=\"\(Format.fixed(y, 1))\" width=\"\(Format.fixed(goalWidth, 1))\" height=\"12\" rx=\"2\" fill=\"#2f6fdf\"/>"
      svg += "<text x=\"\(Format.fixed(left + goalWidth + 4, 1))\" y=\"\(Format.fixed(y + 10, 1))\">\(escape(goalLabel))</text>"
      svg += "<rect x=\"\(left)\" y=\"\(Format.fixed(y + 14, 1))\" width=\"\(Format.fixed(closeWidth, 1))\" height=\"12\" rx=\"2\" fill=\"\(alert ? "#cf222e" : "#a450d8")\"/>"
      svg += "<text x=\"\(Format.fixed(left + closeWidth + 4, 1))\" y=\"\(Format.fixed(y + 24, 1))\">\(escape(closeLabel))</text>"
    }
    return svg + "</svg><div class=\"muted\">blue: goal rate · purple: close rate</div>"
  }
}
