/// `testing/hideAllTips`: Testing: every tip is hidden.
public struct HideAllTipsRequest: RequestType, Hashable {
  public static let method = "testing/hideAllTips"
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = []
  public init() {}
  public init(from p: Params) throws(ResponseError) {}
  public typealias Response = NullResult
}
