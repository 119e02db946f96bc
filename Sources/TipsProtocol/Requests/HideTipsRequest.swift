/// `testing/hideTips`: Testing: these tips are hidden.
public struct HideTipsRequest: RequestType, Hashable {
  public static let method = "testing/hideTips"
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = [.required("ids")]

  public var ids: [String]

  public init(ids: [String]) { self.ids = ids }

  public init(from p: Params) throws(ResponseError) {
    ids = try p.stringArray("ids")
  }

  public typealias Response = NullResult
}
