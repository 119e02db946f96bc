/// `testing/showTips`: Testing: these tips display (outranks every other override).
public struct ShowTipsRequest: RequestType, Hashable {
  public static let method = "testing/showTips"
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = [.required("ids")]

  public var ids: [String]

  public init(ids: [String]) { self.ids = ids }

  public init(from p: Params) throws(ResponseError) {
    ids = try p.stringArray("ids")
  }

  public typealias Response = NullResult
}
