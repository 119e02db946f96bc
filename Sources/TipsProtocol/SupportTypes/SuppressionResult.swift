public import TipsEngine
public import TipsJSON

/// `Suppression`: `{suppressed, since, until, reason}` — the suppression in force after the call (`since`, `until`
/// and `reason` null when none; `until` null for one that waits for `tips/resume`).
public struct SuppressionResult: ResultValue, Hashable {
  public var suppression: Suppression?

  public init(_ suppression: Suppression?) { self.suppression = suppression }

  public static let shape = ResultShape.object(
    ObjectShape(["suppressed", "since", "until", "reason"]), schema: "Suppression")

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("suppressed")
    writer.writeBool(suppression != nil)
    writer.key("since")
    if let since = suppression?.since { writer.writeDouble(since) } else { writer.writeNull() }
    writer.key("until")
    if let until = suppression?.until { writer.writeDouble(until) } else { writer.writeNull() }
    writer.key("reason")
    writer.writeOptionalString(suppression?.reason)
    writer.endObject()
  }

  /// The same object as a JSON value (`inspect/state`'s `suppression`).
  public var json: JSONValue {
    [
      "suppressed": .bool(suppression != nil), "since": suppression.map { .double($0.since) } ?? .null,
      "until": suppression?.until.map { .double($0) } ?? .null,
      "reason": suppression?.reason.map { .string($0) } ?? .null,
    ]
  }
}

extension SuppressionResult: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    guard try r.bool("suppressed") else {
      self.init(nil)
      return
    }
    self.init(
      Suppression(
        since: try r.double("since"), until: try r.optionalDouble("until"), reason: try r.optionalString("reason")))
  }
}
