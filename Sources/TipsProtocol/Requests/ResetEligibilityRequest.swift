/// `tips/resetEligibility`: an invalidated tip returns to pending or available, its display budget afresh.
public struct ResetEligibilityRequest: RequestType, Hashable {
  public static let method = "tips/resetEligibility"
  public static let traits: MethodTraits = .syncedChange
  public static let params: [ParamSpec] = [.required("id"), .optional("idempotencyKey")]

  public var id: String

  public init(id: String) { self.id = id }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
  }

  public typealias Response = TipStateInfo
}
