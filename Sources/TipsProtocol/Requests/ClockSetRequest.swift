/// `clock/set`: sets the virtual clock (seconds since the Unix epoch).
public struct ClockSetRequest: RequestType, Hashable {
  public static let method = "clock/set"
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = [.required("now")]

  public var now: Double

  public init(now: Double) { self.now = now }

  public init(from p: Params) throws(ResponseError) {
    now = try p.double("now")
    guard now.isFinite else { throw p.invalid("now", "must be a finite number of seconds since the Unix epoch") }
  }

  public typealias Response = NowResult
}
