/// `analytics/unsubscribe`: ends this connection's `analytics/subscribe` subscription (idempotent for issued ids).
public struct AnalyticsUnsubscribeRequest: RequestType, Hashable {
  public static let method = "analytics/unsubscribe"
  public static let traits: MethodTraits = MethodTraits(scope: .fleetWide)
  public static let params: [ParamSpec] = [.required("subscription")]

  public var subscription: String

  public init(subscription: String) { self.subscription = subscription }

  public init(from p: Params) throws(ResponseError) {
    subscription = try p.string("subscription")
  }

  public typealias Response = RemovedResult
}
