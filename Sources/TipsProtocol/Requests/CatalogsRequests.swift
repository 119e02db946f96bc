public import TipsJSON

/// A result object written as it is held (the catalogs' and the audit log's admin methods: small, never on a hot
/// path). `members` order the writing; ``ResultValue/shape`` names them for the comparison with openrpc.json.
public protocol ObjectResult: ResultValue, Hashable {
  var value: JSONObject { get }
  init(value: JSONObject)
}

extension ObjectResult {
  public func write(to writer: inout JSONWriter) {
    guard case .object(let shape, _) = Self.shape else { return writer.write(.object(value)) }
    writer.beginObject()
    for member in shape.members {
      guard let item = value[member] else { continue }
      writer.key(member)
      writer.write(item)
    }
    writer.endObject()
  }

  public init(json: JSONValue) throws(ResultDecodingError) {
    guard case .object(let object) = json else { throw ResultDecodingError("result: expected an object") }
    self.init(value: object)
  }
}

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

/// `audit/list` (hosted mode, admin only): the audit log's entries after `after` (an entry id), oldest first.
public struct AuditListRequest: RequestType, Hashable {
  public static let method = "audit/list"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [.optional("app"), .optional("after"), .optional("limit")]
  public static let maxLimit = 1_000

  public var app: String?
  public var after: Int64?
  public var limit: Int

  public init(app: String? = nil, after: Int64? = nil, limit: Int = 100) {
    self.app = app
    self.after = after
    self.limit = limit
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.optionalString("app")
    after = try p.optionalInt("after").map { Int64($0) }
    limit = try p.optionalInt("limit") ?? 100
    guard (1...Self.maxLimit).contains(limit) else {
      throw p.invalid("limit", "must be from 1 to \(Self.maxLimit) (got \(limit))")
    }
  }

  public struct Response: ObjectResult {
    public var value: JSONObject
    public init(value: JSONObject) { self.value = value }
    public static let shape = ResultShape.object(ObjectShape(["entries", "next"]), schema: "AuditPage")
  }
}

extension AuditListRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    var params: JSONObject = ["limit": .int(Int64(limit))]
    if let app { params["app"] = .string(app) }
    if let after { params["after"] = .int(after) }
    return .object(params)
  }
}
