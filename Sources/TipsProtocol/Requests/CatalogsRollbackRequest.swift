public import TipsJSON

/// `catalogs/rollback` (hosted mode, admin only): makes a stored version the app's current catalog again.
public struct CatalogsRollbackRequest: RequestType, Hashable {
  public static let method = "catalogs/rollback"
  public static let traits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [.required("app"), .required("version")]

  public var app: String
  public var version: Int

  public init(app: String, version: Int) {
    self.app = app
    self.version = version
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    version = try p.int("version")
  }

  public struct Response: ObjectResult {
    public var value: JSONObject
    public init(value: JSONObject) { self.value = value }
    public static let shape = ResultShape.object(ObjectShape(["version"]), schema: nil)
  }
}

extension CatalogsRollbackRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app), "version": .int(Int64(version))] }
}
