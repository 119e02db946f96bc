/// `tips/unregister`: removes tips (their state is kept for a later registration).
public struct UnregisterTipsRequest: RequestType, Hashable {
  public static let method = "tips/unregister"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [.required("ids")]

  public var ids: [String]

  public init(ids: [String]) { self.ids = ids }

  public init(from p: Params) throws(ResponseError) {
    ids = try p.stringArray("ids")
  }

  /// The ids that were registered (and now are not).
  public typealias Response = IdsResult
}
