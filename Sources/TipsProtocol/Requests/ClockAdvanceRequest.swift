/// `clock/advance`: moves the virtual clock forward; time-driven changes notify as they would in real time.
public struct ClockAdvanceRequest: RequestType, Hashable {
  public static let method = "clock/advance"
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = [.required("seconds")]

  public var seconds: Double

  public init(seconds: Double) { self.seconds = seconds }

  public init(from p: Params) throws(ResponseError) {
    seconds = try p.double("seconds")
    guard seconds >= 0, seconds.isFinite else { throw p.invalid("seconds", "must be a non-negative number") }
  }

  public typealias Response = NowResult
}
