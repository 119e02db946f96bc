public import TipsEngine
public import TipsJSON

/// `AnalyticsEvent`: one lifecycle history entry as the analytics stream carries it (`analytics/event`,
/// `analytics/read`). The member names are stable (protocol/README.md, "Analytics stream"):
///
/// `{cursor, type, tipId, variant, at}` always (`variant` null for a tip without variants), plus by `type`:
/// `impression` → `duration`; `eligibility` → `status`, `shouldDisplay`, `reason` (when invalidated);
/// `invalidation` → `reason`; `action` → `actionId`, `actionIndex`; `variant` → nothing more.
public struct AnalyticsEventInfo: Sendable, Hashable {
  public var event: HistoryEvent
  /// Hosted mode's admin streams (every account's events): the event's account; nil otherwise.
  public var account: String?

  public init(_ event: HistoryEvent, account: String? = nil) {
    self.event = event
    self.account = account
  }

  public static let members = [
    "cursor", "type", "tipId", "variant", "at", "duration", "status", "shouldDisplay", "reason", "actionId",
    "actionIndex", "account",
  ]
  public static let optionalMembers: Set<String> = [
    "duration", "status", "shouldDisplay", "reason", "actionId", "actionIndex", "account",
  ]
  public static let shape = ObjectShape(members, optional: optionalMembers)

  /// Writes the members into an open object.
  public func writeMembers(to writer: inout JSONWriter) {
    writer.key("cursor")
    writer.writeInt(event.cursor)
    writer.key("type")
    writer.writeString(event.kind.rawValue)
    writer.key("tipId")
    writer.writeString(event.tipID ?? "")
    writer.key("variant")
    writer.writeOptionalString(event.variant)
    writer.key("at")
    writer.writeDouble(event.at)
    if let duration = event.duration {
      writer.key("duration")
      writer.writeDouble(duration)
    }
    if let status = event.status {
      writer.key("status")
      writer.writeString(status)
    }
    if let shouldDisplay = event.shouldDisplay {
      writer.key("shouldDisplay")
      writer.writeBool(shouldDisplay)
    }
    if let reason = event.reason {
      writer.key("reason")
      writer.writeString(reason)
    }
    if let actionID = event.actionID {
      writer.key("actionId")
      writer.writeString(actionID)
    }
    if let index = event.actionIndex {
      writer.key("actionIndex")
      writer.writeInt(index)
    }
    if let account {
      writer.key("account")
      writer.writeString(account)
    }
  }

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writeMembers(to: &writer)
    writer.endObject()
  }
}

extension AnalyticsEventInfo: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    let name = try r.string("type")
    guard let kind = HistoryEvent.Kind(rawValue: name), kind.isStreamed else {
      throw r.invalid("type", "is not an analytics event type (got \"\(name)\")")
    }
    self.init(
      HistoryEvent(
        cursor: try r.int64("cursor"), kind: kind, at: try r.double("at"), tipID: try r.string("tipId"),
        variant: try r.optionalString("variant"), duration: try r.optionalDouble("duration"),
        actionID: try r.optionalString("actionId"), actionIndex: try r.optionalInt("actionIndex"),
        reason: try r.optionalString("reason"), status: try r.optionalString("status"),
        shouldDisplay: try r.optionalBool("shouldDisplay")),
      account: try r.optionalString("account"))
  }
}
