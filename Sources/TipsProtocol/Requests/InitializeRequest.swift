public import TipsJSON

/// `initialize`: the handshake; must be the first request on a connection.
public struct InitializeRequest: EncodableRequest, Hashable {
  public static let method = "initialize"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [
    .required("protocolVersion"), .required("clientInfo"), .optional("locale"), .optional("installId"),
    .optional("auth"), .optional("app"),
  ]
  /// Newer clients may send members this daemon does not know.
  public static let acceptsUnknownParams = true

  /// `MAJOR.MINOR` the client speaks.
  public var protocolVersion: String
  /// `clientInfo.name`, for logs.
  public var clientName: String
  /// `clientInfo.version`.
  public var clientVersion: String?
  /// BCP 47 tag choosing the copy of localized tips sent to this connection.
  public var locale: String?
  /// The app install's id, which A/B variants are assigned from (ignored when the daemon runs with
  /// `--install-id`).
  public var installID: String?
  /// Hosted mode: `auth.token`, the app's JWT (or the admin token) — how a Unix-socket or stdio client signs in.
  public var authToken: String?
  /// Hosted mode: the app the session signs in to (#48; its token must verify against that app's keys); nil:
  /// `default`, or the WebSocket path's (`/apps/<id>`).
  public var app: String?

  /// A client's handshake; it speaks this build's protocol (``ProtocolVersion/current``) unless told otherwise.
  public init(
    protocolVersion: String = ProtocolVersion.current, clientName: String, clientVersion: String? = nil,
    locale: String? = nil, installID: String? = nil, authToken: String? = nil, app: String? = nil
  ) {
    self.protocolVersion = protocolVersion
    self.clientName = clientName
    self.clientVersion = clientVersion
    self.locale = locale
    self.installID = installID
    self.authToken = authToken
    self.app = app
  }

  /// The params every client sends: the one place a handshake is written.
  public var encodedParams: JSONValue? {
    var info: JSONObject = ["name": .string(clientName)]
    if let clientVersion { info["version"] = .string(clientVersion) }
    var params: JSONObject = ["protocolVersion": .string(protocolVersion), "clientInfo": .object(info)]
    if let locale { params["locale"] = .string(locale) }
    if let installID { params["installId"] = .string(installID) }
    if let authToken { params["auth"] = ["token": .string(authToken)] }
    if let app { params["app"] = .string(app) }
    return .object(params)
  }

  public init(from p: Params) throws(ResponseError) {
    protocolVersion = try p.string("protocolVersion")
    let clientInfo = try p.object("clientInfo")
    clientName = clientInfo["name"]?.stringValue ?? "?"
    clientVersion = clientInfo["version"]?.stringValue
    locale = try p.optionalString("locale")
    installID = try p.optionalString("installId")
    if let auth = try p.optionalObject("auth") {
      guard case .string(let token)? = auth["token"] else { throw p.invalid("auth", "must be {\"token\": string}") }
      authToken = token
    }
    app = try p.optionalString("app")
  }

  /// The major version, which must equal the daemon's.
  public var major: Substring { ProtocolVersion.major(of: protocolVersion) }

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
      ObjectShape(["protocolVersion", "serverInfo", "capabilities", "auth"], optional: ["auth"]),
      schema: "InitializeResult")
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

extension InitializeRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    let server = try r.nested("serverInfo")
    let capabilities = try r.nested("capabilities")
    self.init(
      protocolVersion: try r.string("protocolVersion"), serverName: try server.string("name"),
      serverVersion: try server.string("version"), framings: try capabilities.strings("framings"),
      virtualClock: try capabilities.bool("virtualClock"), maxMessageSize: try capabilities.int("maxMessageSize"),
      notifications: try capabilities.strings("notifications"), methods: try capabilities.strings("methods"),
      auth: try r.decodeIfPresent("auth", as: SignIn.self))
  }
}
