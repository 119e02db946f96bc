public import TipsJSON

/// `catalogs/schedule` (hosted mode, admin only): makes a stored version current at an instant (seconds since the
/// epoch), once, by whichever node of the fleet runs then.
public struct CatalogsScheduleRequest: RequestType, Hashable {
  public static let method = "catalogs/schedule"
  public static let traits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [.required("app"), .required("version"), .required("at")]

  public var app: String
  public var version: Int
  public var at: Double

  public init(app: String, version: Int, at: Double) {
    self.app = app
    self.version = version
    self.at = at
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    version = try p.int("version")
    at = try p.double("at")
    guard at.isFinite, at >= 0 else { throw p.invalid("at", "must be seconds since the epoch (got \(at))") }
  }

  public struct Response: ObjectResult {
    public var value: JSONObject
    public init(value: JSONObject) { self.value = value }
    public static let shape = ResultShape.object(ObjectShape(["schedule", "version", "at"]), schema: nil)
  }
}

extension CatalogsScheduleRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    ["app": .string(app), "version": .int(Int64(version)), "at": .double(at)]
  }
}
