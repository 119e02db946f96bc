/// `tips/unobserve`: ends this connection's `tips/observe` subscription (idempotent for issued ids).
public struct UnobserveRequest: RequestType, Hashable {
  public static let method = "tips/unobserve"
  public static let params: [ParamSpec] = [.required("subscription")]

  public var subscription: String

  public init(subscription: String) { self.subscription = subscription }

  public init(from p: Params) throws(ResponseError) {
    subscription = try p.string("subscription")
  }

  public typealias Response = RemovedResult
}
