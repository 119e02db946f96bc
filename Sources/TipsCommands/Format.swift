import TipsEngine

/// How `tipsd`'s commands write numbers and instants for people — the one place (no Foundation).
enum Format {
  /// `value` with exactly `digits` decimals, rounded half away from zero; `—` for an infinite or NaN value.
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

  /// A ratio as a percentage: `50%`, `5.3%` (a decimal below 10%).
  static func percent(_ ratio: Double) -> String {
    fixed(ratio * 100, ratio < 0.1 && ratio > 0 ? 1 : 0) + "%"
  }

  /// Seconds in the largest unit that reads well: `30 s`, `90 min`, `1.5 h`, `2.0 d`.
  static func duration(_ seconds: Double) -> String {
    if seconds < 120 { return fixed(seconds, 0) + " s" }
    if seconds < 7_200 { return fixed(seconds / 60, 0) + " min" }
    if seconds < 172_800 { return fixed(seconds / 3_600, 1) + " h" }
    return fixed(seconds / 86_400, 1) + " d"
  }

  /// A daily rate: two decimals, `—` when unknown.
  static func perDay(_ rate: Double?) -> String {
    rate.map { fixed($0, 2) } ?? "—"
  }

  /// An instant (seconds since the epoch) in UTC: `2026-01-01T00:00:00Z`.
  static func instant(_ seconds: Double) -> String {
    ISO8601.string(from: seconds)
  }

  /// A number as a machine reads it (CSV): an integer when it is one, else its shortest exact form; empty for none.
  static func raw(_ value: Double?) -> String {
    guard let value else { return "" }
    if let integer = Int64(exactly: value) { return String(integer) }
    return String(value)
  }
}

/// Plain-text tables whose columns line up (two spaces between them).
enum TextTable {
  static func render(_ rows: [[String]]) -> String {
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
