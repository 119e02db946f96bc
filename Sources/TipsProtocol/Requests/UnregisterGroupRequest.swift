/// `groups/unregister`: removes a group; its tips are no longer constrained by it.
public struct UnregisterGroupRequest: RequestType, Hashable {
  public static let method = "groups/unregister"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [.required("id")]

  public var id: String

  public init(id: String) { self.id = id }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
  }

  public typealias Response = NullResult
}
