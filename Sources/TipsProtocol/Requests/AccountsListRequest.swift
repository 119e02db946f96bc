public import TipsJSON

/// `accounts/list` (hosted mode, admin only): the accounts PostgreSQL holds, in id order, a page at a time.
public struct AccountsListRequest: RequestType, Hashable {
  public static let method = "accounts/list"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [.optional("after"), .optional("limit")]
  public static let defaultLimit = 100
  public static let maxLimit = 1_000

  /// The page starts after this account id (nil: from the first).
  public var after: String?
  public var limit: Int

  public init(after: String? = nil, limit: Int = AccountsListRequest.defaultLimit) {
    self.after = after
    self.limit = limit
  }

  public init(from p: Params) throws(ResponseError) {
    after = try p.optionalString("after")
    limit = try p.optionalInt("limit") ?? Self.defaultLimit
    guard (1...Self.maxLimit).contains(limit) else {
      throw p.invalid("limit", "must be from 1 to \(Self.maxLimit) (got \(limit))")
    }
  }

  public struct Response: ResultValue, Hashable {
    public struct Account: Hashable, Sendable {
      public var account: String
      /// Operations stored for it (its last `tipsd.ops` cursor).
      public var operations: Int64
      /// Whether this node holds it in memory now.
      public var resident: Bool

      public init(account: String, operations: Int64, resident: Bool) {
        self.account = account
        self.operations = operations
        self.resident = resident
      }
    }

    public var accounts: [Account]
    /// The `after` of the next page; null on the last page.
    public var next: String?

    public init(accounts: [Account], next: String?) {
      self.accounts = accounts
      self.next = next
    }

    public static let shape = ResultShape.object(ObjectShape(["accounts", "next"]), schema: "AccountPage")

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("accounts")
      writer.beginArray()
      for item in accounts {
        writer.beginObject()
        writer.key("account")
        writer.writeString(item.account)
        writer.key("operations")
        writer.writeInt(item.operations)
        writer.key("resident")
        writer.writeBool(item.resident)
        writer.endObject()
      }
      writer.endArray()
      writer.key("next")
      if let next { writer.writeString(next) } else { writer.writeNull() }
      writer.endObject()
    }
  }
}

extension AccountsListRequest.Response.Account: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(account: try r.string("account"), operations: try r.int64("operations"), resident: try r.bool("resident"))
  }
}

extension AccountsListRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(accounts: try r.decodeArray("accounts", of: Account.self), next: try r.optionalString("next"))
  }
}

extension AccountsListRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    var params: JSONObject = ["limit": .int(Int64(limit))]
    if let after { params["after"] = .string(after) }
    return .object(params)
  }
}
