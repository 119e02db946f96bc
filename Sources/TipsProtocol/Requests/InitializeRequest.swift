public import TipsJSON

/// `initialize`: the handshake; must be the first request on a connection.
public struct InitializeRequest: RequestType, Hashable {
  public static let method = "initialize"
  public static let params: [ParamSpec] = [
    .required("protocolVersion"), .required("clientInfo"), .optional("locale"), .optional("installId"),
    .optional("auth"),
  ]
  /// Newer clients may send members this daemon does not know.
  public static let acceptsUnknownParams = true

  /// `MAJOR.MINOR` the client speaks.
  public var protocolVersion: String
  /// `clientInfo.name`, for logs.
  public var clientName: String
  /// BCP 47 tag choosing the copy of localized tips sent to this connection.
  public var locale: String?
  /// The app install's id, which A/B variants are assigned from (ignored when the daemon runs with
  /// `--install-id`).
  public var installID: String?
  /// Hosted mode: `auth.token`, the app's JWT (or the admin token) — how a Unix-socket or stdio client signs in.
  public var authToken: String?

  public init(
    protocolVersion: String, clientName: String, locale: String? = nil, installID: String? = nil,
    authToken: String? = nil
  ) {
    self.protocolVersion = protocolVersion
    self.clientName = clientName
    self.locale = locale
    self.installID = installID
    self.authToken = authToken
  }

  public init(from p: Params) throws(ResponseError) {
    protocolVersion = try p.string("protocolVersion")
    clientName = try p.object("clientInfo")["name"]?.stringValue ?? "?"
    locale = try p.optionalString("locale")
    installID = try p.optionalString("installId")
    if let auth = try p.optionalObject("auth") {
      guard case .string(let token)? = auth["token"] else { throw p.invalid("auth", "must be {\"token\": string}") }
      authToken = token
    }
  }

  /// The major version, which must equal the daemon's.
  public var major: Substring { protocolVersion.split(separator: ".", maxSplits: 1).first ?? Substring(protocolVersion) }

  public struct Response: ResultValue, Hashable {
    public var protocolVersion: String
    public var serverName: String
    public var serverVersion: String
    public var framings: [String]
    public var virtualClock: Bool
    public var maxMessageSize: Int
    /// Server-to-client notifications.
    public var notifications: [String]
    /// Client-to-server methods and notifications the daemon answers.
    public var methods: [String]
    /// Hosted mode: who the session is signed in as (absent otherwise, and before signing in).
    public var auth: SignIn?

    public init(
      protocolVersion: String, serverName: String = "tipsd", serverVersion: String, framings: [String],
      virtualClock: Bool, maxMessageSize: Int, notifications: [String], methods: [String], auth: SignIn? = nil
    ) {
      self.protocolVersion = protocolVersion
      self.serverName = serverName
      self.serverVersion = serverVersion
      self.framings = framings
      self.virtualClock = virtualClock
      self.maxMessageSize = maxMessageSize
      self.notifications = notifications
      self.methods = methods
      self.auth = auth
    }

    public static let shape = ResultShape.object(
      ObjectShape(["protocolVersion", "serverInfo", "capabilities", "auth"], optional: ["auth"]), schema: "InitializeResult")
    /// `capabilities`.
    public static let capabilitiesShape = ObjectShape(
      ["framings", "virtualClock", "maxMessageSize", "notifications", "methods"])

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("protocolVersion")
      writer.writeString(protocolVersion)
      writer.key("serverInfo")
      writer.beginObject()
      writer.key("name")
      writer.writeString(serverName)
      writer.key("version")
      writer.writeString(serverVersion)
      writer.endObject()
      writer.key("capabilities")
      writer.beginObject()
      writer.key("framings")
      writer.writeStringArray(framings)
      writer.key("virtualClock")
      writer.writeBool(virtualClock)
      writer.key("maxMessageSize")
      writer.writeInt(maxMessageSize)
      writer.key("notifications")
      writer.writeStringArray(notifications)
      writer.key("methods")
      writer.writeStringArray(methods)
      writer.endObject()
      if let auth {
        writer.key("auth")
        auth.write(to: &writer)
      }
      writer.endObject()
    }
  }
}
