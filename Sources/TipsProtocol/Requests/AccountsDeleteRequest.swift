public import TipsJSON

/// `accounts/delete` (hosted mode, admin only): erases an account — every row in PostgreSQL, and from every node's
/// memory, its sessions closed — a user's erasure request. A later sign-in starts from nothing.
public struct AccountsDeleteRequest: RequestType, Hashable {
  public static let method = "accounts/delete"
  public static let traits: MethodTraits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [.required("account")]

  public var account: String

  public init(account: String) { self.account = account }

  public init(from p: Params) throws(ResponseError) {
    account = try p.string("account")
  }

  public struct Response: ResultValue, Hashable {
    public var account: String
    /// Sessions of the account this node closed.
    public var closedSessions: Int

    public init(account: String, closedSessions: Int) {
      self.account = account
      self.closedSessions = closedSessions
    }

    public static let shape = ResultShape.object(ObjectShape(["account", "closedSessions"]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("account")
      writer.writeString(account)
      writer.key("closedSessions")
      writer.writeInt(closedSessions)
      writer.endObject()
    }
  }
}

extension AccountsDeleteRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(account: try r.string("account"), closedSessions: try r.int("closedSessions"))
  }
}

extension AccountsDeleteRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["account": .string(account)] }
}
