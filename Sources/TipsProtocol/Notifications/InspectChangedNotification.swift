public import TipsJSON

/// `inspect/changed`: something changed since the `inspect/state {watch: true}` that armed it (sent once; the
/// next `inspect/state {watch: true}` arms it again), so an inspector refreshes without polling.
public struct InspectChangedNotification: ServerNotificationType, Hashable {
  public static let method = "inspect/changed"
  public static let paramsShape = ObjectShape(["subscription", "seq"])

  public var subscription: String
  public var seq: Int64

  public init(subscription: String, seq: Int64 = 0) {
    self.subscription = subscription
    self.seq = seq
  }

  public func writeParams(to writer: inout JSONWriter) {
    writeSubscriptionMembers(to: &writer)
    writer.endObject()
  }
}
