public import TipsJSON

/// `catalogs/publish` (hosted mode, admin only): lints `catalog` as `tipsd lint` does — refused with -32602 carrying
/// the diagnostics on an error, nothing stored — and makes it the app's next version; every node switches to it.
/// `dryRun: true` stores nothing and reports how many resident accounts' `shouldDisplay` would change on this node.
public struct CatalogsPublishRequest: RequestType, Hashable {
  public static let method = "catalogs/publish"
  public static let traits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [
    .required("app"), .required("catalog"), .optional("note"), .optional("dryRun"),
  ]

  public var app: String
  public var catalog: JSONObject
  public var note: String
  public var dryRun: Bool

  public init(app: String, catalog: JSONObject, note: String = "", dryRun: Bool = false) {
    self.app = app
    self.catalog = catalog
    self.note = note
    self.dryRun = dryRun
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    catalog = try p.object("catalog")
    note = try p.optionalString("note") ?? ""
    dryRun = try p.optionalBool("dryRun") ?? false
  }

  public struct Response: ObjectResult {
    public var value: JSONObject
    public init(value: JSONObject) { self.value = value }
    public static let shape = ResultShape.object(
      ObjectShape(
        ["version", "digest", "dryRun", "residentAccounts", "changedAccounts", "diff"],
        optional: ["residentAccounts", "changedAccounts", "diff"]), schema: "CatalogPublish")
  }
}

extension CatalogsPublishRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    ["app": .string(app), "catalog": .object(catalog), "note": .string(note), "dryRun": .bool(dryRun)]
  }
}
