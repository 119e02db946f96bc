/// `shutdown`: stop accepting work on this connection; only the `exit` notification is accepted afterwards.
public struct ShutdownRequest: RequestType, Hashable {
  public static let method = "shutdown"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = []
  public init() {}
  public init(from p: Params) throws(ResponseError) {}
  public typealias Response = NullResult
}
