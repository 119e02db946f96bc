import TipsMetrics
import TipsProtocol
import TipsServer

/// `tipsd report`'s page: self-contained (inline CSS and SVG, no script, no external resource).
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

  static let style = """
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
    """

  static func render(state: InspectState, metrics: MetricsReport) -> String {
    let generated = escape(Format.instant(state.now))
    var html = """
      <!doctype html>
      <html lang="en"><head><meta charset="utf-8">
      <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
      <title>tipsd report \(generated)</title>
      <style>
      \(style)
      </style></head><body>
      <h1>tipsd report</h1>

      """
    html += "<p class=\"muted\">Generated \(generated)\(state.virtualClock ? " (virtual clock)" : "") by tipsd "
    html += "\(escape(TipsdVersion.server)).</p>\n"
    html += "<h2>Did it help?</h2>\n"
    if metrics.configuration.appClosedEvent == nil {
      html += "<p class=\"muted\">Close rate unavailable: the daemon runs without --app-closed-event.</p>\n"
    }
    for tip in metrics.tips {
      let bars = tip.variants.isEmpty ? [("all", tip.overall)] : tip.variants.map { ($0.name, $0.metrics) }
      html += "<div class=\"card\"><strong>\(escape(tip.tipID))</strong>"
      if let goal = tip.goal { html += " <span class=\"muted\">goal: \(escape(goal.eventID))</span>" }
      if tip.overall.close?.alert == true { html += "<div class=\"alert\">close rate over the alert</div>" }
      html += chart(bars) + "</div>\n"
    }
    html += table(
      [["tip", "variant", "impressions", "goal", "time to goal", "close", "goal/day before → after"]]
        + MetricsRow.rows(metrics).map(MetricsTable.cells))

    html += "<h2>Tips</h2>\n"
    html += table(
      [["tip", "variant", "status", "shouldDisplay", "displays", "displayed", "why"]]
        + state.tips.map { InspectText.tipCells($0) + [$0.lines.joined(separator: "\n")] })
    html += "<h2>Events</h2>\n"
    html += table([["event", "kept", "ever", "last donation", "role"]] + state.events.map(InspectText.eventCells))
    if !state.parameters.isEmpty {
      html += "<h2>Parameters</h2>\n"
      html += table(
        [["parameter", "value", "default"]]
          + state.parameters.map { [$0.id, $0.value.jsonString, $0.defaultValue.jsonString] })
    }
    if !state.groups.isEmpty {
      html += "<h2>Groups</h2>\n"
      html += table([["group", "priority", "current tip", "tips"]] + state.groups.map(InspectText.groupCells))
    }
    return html + "</body></html>\n"
  }

  /// Goal rate and close rate bars per variant, as inline SVG.
  static func chart(_ bars: [(name: String, metrics: MetricSet)]) -> String {
    let width = 320.0
    let left = 80.0
    let scale = width - left - 60
    let rowHeight = 34.0
    let height = Int(Double(bars.count) * rowHeight + 6)
    var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(height)\">"
    func number(_ value: Double) -> String { Format.fixed(value, 1) }
    for (index, bar) in bars.enumerated() {
      let y = Double(index) * rowHeight + 4
      let goal = bar.metrics.goal?.rate
      let close = bar.metrics.close
      let goalLabel = goal.map { "\(Format.percent($0)) n=\(bar.metrics.goal?.decided ?? 0)" } ?? "—"
      let closeLabel = close.map { "\($0.rate.map(Format.percent) ?? "—") n=\($0.decided)" } ?? "n/a"
      let goalWidth = max(1, (goal ?? 0) * scale)
      let closeWidth = max(1, (close?.rate ?? 0) * scale)
      let closeColor = close?.alert == true ? "#cf222e" : "#a450d8"
      svg += "<text x=\"0\" y=\"\(number(y + 18))\">\(escape(bar.name))</text>"
      svg +=
        "<rect x=\"\(left)\" y=\"\(number(y))\" width=\"\(number(goalWidth))\" height=\"12\" rx=\"2\" fill=\"#2f6fdf\"/>"
      svg += "<text x=\"\(number(left + goalWidth + 4))\" y=\"\(number(y + 10))\">\(escape(goalLabel))</text>"
      svg += "<rect x=\"\(left)\" y=\"\(number(y + 14))\" width=\"\(number(closeWidth))\" height=\"12\" rx=\"2\" "
      svg += "fill=\"\(closeColor)\"/>"
      svg += "<text x=\"\(number(left + closeWidth + 4))\" y=\"\(number(y + 24))\">\(escape(closeLabel))</text>"
    }
    return svg + "</svg><div class=\"muted\">blue: goal rate · purple: close rate</div>"
  }
}
