/// `tips/suppress`: no tip is displayable (testing overrides excepted) for `seconds`, or until `tips/resume` —
/// checkout, a modal, a call in progress (flutter_tipkit's `Tips.suppress`). Replaces a running suppression. It
/// starts no display-frequency cooldown and invalidates nothing; it ends by itself, notifying observers, and
/// survives a restart. This device's own: it is never synced.
public struct SuppressRequest: RequestType, Hashable {
  public static let method = "tips/suppress"
  public static let traits: MethodTraits = MethodTraits(hosted: .deviceOnly)
  public static let params: [ParamSpec] = [.optional("seconds"), .optional("reason")]

  public var seconds: Double?
  public var reason: String?

  public init(seconds: Double? = nil, reason: String? = nil) {
    self.seconds = seconds
    self.reason = reason
  }

  public init(from p: Params) throws(ResponseError) {
    seconds = try p.optionalDouble("seconds")
    if let seconds, !(seconds.isFinite && seconds > 0) {
      throw p.invalid("seconds", "must be a positive number of seconds")
    }
    reason = try p.optionalString("reason")
  }

  public typealias Response = SuppressionResult
}
