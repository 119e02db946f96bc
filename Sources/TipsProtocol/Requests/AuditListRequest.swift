public import TipsJSON

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
