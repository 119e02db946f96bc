public import TipsJSON

/// `catalogs/diff` (hosted mode, admin only): the tips added, removed and changed (rules, copy, variants) between two
/// stored versions of an app's catalog.
public struct CatalogsDiffRequest: RequestType, Hashable {
  public static let method = "catalogs/diff"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [.required("app"), .required("from"), .required("to")]

  public var app: String
  public var from: Int
  public var to: Int

  public init(app: String, from: Int, to: Int) {
    self.app = app
    self.from = from
    self.to = to
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    from = try p.int("from")
    to = try p.int("to")
  }

  public struct Response: ObjectResult {
    public var value: JSONObject
    public init(value: JSONObject) { self.value = value }
    public static let shape = ResultShape.object(
      ObjectShape(["from", "to", "added", "removed", "changed", "others", "displayFrequency"]), schema: "CatalogDiff")
  }
}

extension CatalogsDiffRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    ["app": .string(app), "from": .int(Int64(from)), "to": .int(Int64(to))]
  }
}
