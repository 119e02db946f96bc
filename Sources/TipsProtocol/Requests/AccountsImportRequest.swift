public import TipsJSON

/// `accounts/import` (hosted mode, admin only): makes an account from an `accounts/export` result — restoring a
/// user's data, or moving it to another account id. The account must not hold anything yet.
public struct AccountsImportRequest: RequestType, Hashable {
  public static let method = "accounts/import"
  public static let traits: MethodTraits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [.required("account"), .required("export")]

  public var account: String
  /// An `accounts/export` result (its `state` and `history` are read; its `account` may name another account).
  public var export: JSONObject

  public init(account: String, export: JSONObject) {
    self.account = account
    self.export = export
  }

  public init(from p: Params) throws(ResponseError) {
    account = try p.string("account")
    export = try p.object("export")
  }

  public struct Response: ResultValue, Hashable {
    public var account: String
    /// History entries imported.
    public var history: Int

    public init(account: String, history: Int) {
      self.account = account
      self.history = history
    }

    public static let shape = ResultShape.object(ObjectShape(["account", "history"]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("account")
      writer.writeString(account)
      writer.key("history")
      writer.writeInt(history)
      writer.endObject()
    }
  }
}

extension AccountsImportRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(account: try r.string("account"), history: try r.int("history"))
  }
}

extension AccountsImportRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["account": .string(account), "export": .object(export)] }
}
