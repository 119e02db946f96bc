/// `actions/subscribe`: subscribes to `tips/actionPerformed` for some tips, or all.
public struct SubscribeActionsRequest: RequestType, Hashable {
  public static let method = "actions/subscribe"
  public static let params: [ParamSpec] = [.optional("tipIds")]

  /// nil: actions of every tip.
  public var tipIDs: [String]?

  public init(tipIDs: [String]? = nil) { self.tipIDs = tipIDs }

  public init(from p: Params) throws(ResponseError) {
    tipIDs = try p.optionalStringArray("tipIds")
  }

  public typealias Response = SubscriptionResult
}
