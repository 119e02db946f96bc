public import TipsJSON

/// `auth/refresh` (hosted mode): replaces the session's token with a newer one for the same account, in place —
/// subscriptions are kept; the session then ends when the new token expires.
public struct AuthRefreshRequest: RequestType, Hashable {
  public static let method = "auth/refresh"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [.required("token")]

  /// The app's JWT (or the admin token).
  public var token: String

  public init(token: String) { self.token = token }

  public init(from p: Params) throws(ResponseError) {
    token = try p.string("token")
  }

  public typealias Response = SignIn
}

/// Who a hosted session is signed in as: `initialize`'s `auth` result and `auth/refresh`'s.
public struct SignIn: ResultValue, Hashable {
  /// The account (the token's `sub`); null for the admin.
  public var account: String?
  /// Whether the session holds the admin token.
  public var admin: Bool
  /// When the token expires (seconds since 1970-01-01 UTC); null for the admin token, which does not.
  public var expiresAt: Double?

  public init(account: String?, admin: Bool, expiresAt: Double?) {
    self.account = account
    self.admin = admin
    self.expiresAt = expiresAt
  }

  public static let shape = ResultShape.object(ObjectShape(["account", "admin", "expiresAt"]), schema: "SignIn")

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("account")
    if let account { writer.writeString(account) } else { writer.writeNull() }
    writer.key("admin")
    writer.writeBool(admin)
    writer.key("expiresAt")
    if let expiresAt { writer.writeDouble(expiresAt) } else { writer.writeNull() }
    writer.endObject()
  }
}

extension SignIn: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      account: try r.optionalString("account"), admin: try r.bool("admin"), expiresAt: try r.optionalDouble("expiresAt")
    )
  }
}

extension AuthRefreshRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["token": .string(token)] }
}
