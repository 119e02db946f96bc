/// `tips/displayed`: a frontend that draws its own UI reports an impression (and how long it was on screen), so
/// display count, duration and frequency budgets keep working.
public struct DisplayedRequest: RequestType, Hashable {
  public static let method = "tips/displayed"
  public static let traits: MethodTraits = .syncedChange
  public static let params: [ParamSpec] = [.required("id"), .optional("duration"), .optional("idempotencyKey")]

  public var id: String
  /// Seconds on screen (the engine refuses a negative or non-finite one).
  public var duration: Double

  public init(id: String, duration: Double = 0) {
    self.id = id
    self.duration = duration
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    duration = try p.optionalDouble("duration") ?? 0
  }

  public typealias Response = TipStateInfo
}
