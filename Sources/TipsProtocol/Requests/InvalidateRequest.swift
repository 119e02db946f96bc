public import TipsEngine

/// `tips/invalidate`: the tip is done (closed by the user by default); permanent until `tips/resetEligibility`.
public struct InvalidateRequest: RequestType, Hashable {
  public static let method = "tips/invalidate"
  public static let traits: MethodTraits = .syncedChange
  public static let params: [ParamSpec] = [.required("id"), .optional("reason"), .optional("idempotencyKey")]

  public var id: String
  public var reason: InvalidationReason

  public init(id: String, reason: InvalidationReason = .tipClosed) {
    self.id = id
    self.reason = reason
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    reason = try p.optionalEnumeration("reason", InvalidationReason.self) ?? .tipClosed
  }

  public typealias Response = TipStateInfo
}
