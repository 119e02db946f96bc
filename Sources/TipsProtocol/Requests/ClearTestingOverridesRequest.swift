/// `testing/clear`: Testing: removes every testing override.
public struct ClearTestingOverridesRequest: RequestType, Hashable {
  public static let method = "testing/clear"
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = []
  public init() {}
  public init(from p: Params) throws(ResponseError) {}
  public typealias Response = NullResult
}
