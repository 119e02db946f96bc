public import TipsJSON

/// `groups/currentTipChanged`: a watched group's current tip changed (`tipId` null: none is current).
public struct CurrentTipChangedNotification: ServerNotificationType, Hashable {
  public static let method = "groups/currentTipChanged"
  public static let paramsShape = ObjectShape(["subscription", "seq", "group", "tipId"])

  public var subscription: String
  public var seq: Int64
  public var group: String
  public var tipID: String?

  public init(subscription: String, seq: Int64 = 0, group: String, tipID: String?) {
    self.subscription = subscription
    self.seq = seq
    self.group = group
    self.tipID = tipID
  }

  public func writeParams(to writer: inout JSONWriter) {
    writeSubscriptionMembers(to: &writer)
    writer.key("group")
    writer.writeString(group)
    writer.key("tipId")
    writer.writeOptionalString(tipID)
    writer.endObject()
  }
}
