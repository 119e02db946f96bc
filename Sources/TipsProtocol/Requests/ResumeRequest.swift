/// `tips/resume`: ends the suppression (nothing changes when none runs).
public struct ResumeRequest: RequestType, Hashable {
  public static let method = "tips/resume"
  public static let traits: MethodTraits = MethodTraits(hosted: .deviceOnly)
  public static let params: [ParamSpec] = []

  public init() {}

  public init(from p: Params) throws(ResponseError) {}

  public typealias Response = SuppressionResult
}
