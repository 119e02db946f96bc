public import TipsJSON

/// `analytics/event`: one lifecycle event for an `analytics/subscribe` subscription, in cursor order (replayed
/// from the history after `after`, then live). At least once: after a reconnect, subscribe with the last cursor
/// processed.
public struct AnalyticsEventNotification: ServerNotificationType, Hashable {
  public static let method = "analytics/event"
  public static let paramsShape = ObjectShape(
    ["subscription", "seq"] + AnalyticsEventInfo.members, optional: AnalyticsEventInfo.optionalMembers)

  public var subscription: String
  public var seq: Int64
  public var event: AnalyticsEventInfo

  public init(subscription: String, seq: Int64 = 0, event: AnalyticsEventInfo) {
    self.subscription = subscription
    self.seq = seq
    self.event = event
  }

  public func writeParams(to writer: inout JSONWriter) {
    writeSubscriptionMembers(to: &writer)
    event.writeMembers(to: &writer)
    writer.endObject()
  }
}
