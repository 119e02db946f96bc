/// `tips/setVariant`: forces the A/B variant a tip with `variants` shows on this install (sticky, stored), or with
/// `variant` null or absent goes back to the one the install id picks. The tip is reported again with the
/// variant's own status and display budget; events stay shared.
public struct SetVariantRequest: RequestType, Hashable {
  public static let method = "tips/setVariant"
  public static let traits: MethodTraits = MethodTraits(isChange: true, isIdempotent: true, hosted: .testingOnly)
  public static let params: [ParamSpec] = [.required("id"), .optional("variant"), .optional("idempotencyKey")]

  public var id: String
  public var variant: String?

  public init(id: String, variant: String?) {
    self.id = id
    self.variant = variant
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    variant = try p.optionalString("variant")
  }

  public typealias Response = TipStateInfo
}
