public import TipsJSON

/// `tips/actionPerformed`: a tip's action was performed (by any client). `actions` is always an array (seed 000),
/// titled in the subscriber's locale.
public struct ActionPerformedNotification: ServerNotificationType, Hashable {
  public static let method = "tips/actionPerformed"
  public static let paramsShape = ObjectShape(["subscription", "seq", "tipId", "actions"])

  public var subscription: String
  public var seq: Int64
  public var tipID: String
  public var actions: [ActionInfo]

  public init(subscription: String, seq: Int64 = 0, tipID: String, actions: [ActionInfo]) {
    self.subscription = subscription
    self.seq = seq
    self.tipID = tipID
    self.actions = actions
  }

  public func writeParams(to writer: inout JSONWriter) {
    writeSubscriptionMembers(to: &writer)
    writer.key("tipId")
    writer.writeString(tipID)
    writer.key("actions")
    writer.beginArray()
    for action in actions { action.write(to: &writer) }
    writer.endArray()
    writer.endObject()
  }
}
