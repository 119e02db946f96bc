/// `actions/unsubscribe`: ends this connection's `actions/subscribe` subscription (idempotent for issued ids).
public struct UnsubscribeActionsRequest: RequestType, Hashable {
  public static let method = "actions/unsubscribe"
  public static let params: [ParamSpec] = [.required("subscription")]

  public var subscription: String

  public init(subscription: String) { self.subscription = subscription }

  public init(from p: Params) throws(ResponseError) {
    subscription = try p.string("subscription")
  }

  public typealias Response = RemovedResult
}
