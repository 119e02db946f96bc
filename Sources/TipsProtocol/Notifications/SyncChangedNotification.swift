public import TipsJSON

/// `sync/changed` (hosted mode): the account's operations moved to `cursor` (a commit of any node, or a device's
/// push) — sent to every session of the account that called `sync/pull`, which pulls again from its cursor.
public struct SyncChangedNotification: ServerNotificationType, Hashable {
  public static let method = "sync/changed"
  public static let paramsShape = ObjectShape(["subscription", "seq", "cursor"])

  public var subscription: String
  public var seq: Int64
  /// The account's last operation cursor.
  public var cursor: Int64

  public init(subscription: String, seq: Int64 = 0, cursor: Int64) {
    self.subscription = subscription
    self.seq = seq
    self.cursor = cursor
  }

  public func writeParams(to writer: inout JSONWriter) {
    writeSubscriptionMembers(to: &writer)
    writer.key("cursor")
    writer.writeInt(cursor)
    writer.endObject()
  }
}
