/// `testing/showAllTips`: Testing: every tip displays, whatever its rules, frequency or invalidation.
public struct ShowAllTipsRequest: RequestType, Hashable {
  public static let method = "testing/showAllTips"
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = []
  public init() {}
  public init(from p: Params) throws(ResponseError) {}
  public typealias Response = NullResult
}
