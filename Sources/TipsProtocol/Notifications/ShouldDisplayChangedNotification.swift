public import TipsJSON

/// `tips/shouldDisplayChanged`: a watched tip's `shouldDisplay` changed (never the same value twice in a row).
public struct ShouldDisplayChangedNotification: ServerNotificationType, Hashable {
  public static let method = "tips/shouldDisplayChanged"
  public static let paramsShape = ObjectShape(
    ["subscription", "seq", "id", "shouldDisplay", "status", "reason", "variant", "tip"],
    optional: ["reason", "variant"])

  public var subscription: String
  public var seq: Int64
  public var id: String
  public var shouldDisplay: Bool
  public var status: StatusInfo
  /// The A/B variant this install sees, for a tip with `variants`.
  public var variant: String?
  /// The tip's content in the subscriber's locale (and the variant's copy).
  public var tip: TipContent

  public init(
    subscription: String, seq: Int64 = 0, id: String, shouldDisplay: Bool, status: StatusInfo, variant: String? = nil,
    tip: TipContent
  ) {
    self.subscription = subscription
    self.seq = seq
    self.id = id
    self.shouldDisplay = shouldDisplay
    self.status = status
    self.variant = variant
    self.tip = tip
  }

  public func writeParams(to writer: inout JSONWriter) {
    writeSubscriptionMembers(to: &writer)
    writer.key("id")
    writer.writeString(id)
    writer.key("shouldDisplay")
    writer.writeBool(shouldDisplay)
    status.writeMembers(to: &writer)
    if let variant {
      writer.key("variant")
      writer.writeString(variant)
    }
    writer.key("tip")
    tip.write(to: &writer)
    writer.endObject()
  }
}
