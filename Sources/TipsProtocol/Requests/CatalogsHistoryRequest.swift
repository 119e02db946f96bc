public import TipsJSON

/// `catalogs/history` (hosted mode, admin only): the app's stored versions, newest first, and the current one.
public struct CatalogsHistoryRequest: RequestType, Hashable {
  public static let method = "catalogs/history"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [.required("app")]

  public var app: String

  public init(app: String) { self.app = app }

  public init(from p: Params) throws(ResponseError) { app = try p.string("app") }

  public struct Response: ObjectResult {
    public var value: JSONObject
    public init(value: JSONObject) { self.value = value }
    public static let shape = ResultShape.object(ObjectShape(["app", "current", "versions"]), schema: nil)
  }
}

extension CatalogsHistoryRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app)] }
}
