/// `tips/status`: the state of the given tips, or of every registered tip.
public struct StatusRequest: RequestType, Hashable {
  public static let method = "tips/status"
  public static let params: [ParamSpec] = [.optional("ids")]

  /// nil: every tip.
  public var ids: [String]?

  public init(ids: [String]? = nil) { self.ids = ids }

  public init(from p: Params) throws(ResponseError) {
    ids = try p.optionalStringArray("ids")
  }

  public typealias Response = TipStatesResult
}
