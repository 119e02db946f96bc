public import TipsJSON

/// The event types an endpoint may subscribe to (`webhook.test` is sent by `webhooks/test` to one endpoint only).
public enum WebhookEventTypes {
  public static let all = [
    "account.deleted", "catalog.published", "catalog.rolledBack", "experiment.decided", "experiment.srm",
  ]
}

/// `webhooks/create` (hosted mode, admin only): an endpoint of `app` that receives the `events` named, signed per the
/// Standard Webhooks specification with `secret` (`whsec_` + base64; one is generated when absent and answered once).
public struct WebhooksCreateRequest: RequestType, Hashable {
  public static let method = "webhooks/create"
  public static let traits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [
    .required("app"), .required("url"), .required("events"), .optional("secret"),
  ]

  public var app: String
  public var url: String
  public var events: [String]
  public var secret: String?

  public init(app: String, url: String, events: [String], secret: String? = nil) {
    self.app = app
    self.url = url
    self.events = events
    self.secret = secret
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    url = try p.string("url")
    events = try p.stringArray("events")
    secret = try p.optionalString("secret")
    guard !app.isEmpty else { throw p.invalid("app", "must not be empty") }
    guard !events.isEmpty else { throw p.invalid("events", "must name at least one event type") }
    for event in events where !WebhookEventTypes.all.contains(event) {
      throw p.invalid("events", "\(event) is not an event type (\(WebhookEventTypes.all.joined(separator: ", ")))")
    }
  }

  public struct Response: ResultValue, Hashable {
    public var id: Int64
    public var app: String
    public var url: String
    public var events: [String]
    /// The signing secret (`whsec_…`): answered here only.
    public var secret: String

    public init(id: Int64, app: String, url: String, events: [String], secret: String) {
      self.id = id
      self.app = app
      self.url = url
      self.events = events
      self.secret = secret
    }

    public static let shape = ResultShape.object(ObjectShape(["id", "app", "url", "events", "secret"]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("id")
      writer.writeInt(id)
      writer.key("app")
      writer.writeString(app)
      writer.key("url")
      writer.writeString(url)
      writer.key("events")
      writer.beginArray()
      for event in events { writer.writeString(event) }
      writer.endArray()
      writer.key("secret")
      writer.writeString(secret)
      writer.endObject()
    }
  }
}

extension WebhooksCreateRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      id: try r.int64("id"), app: try r.string("app"), url: try r.string("url"), events: try r.strings("events"),
      secret: try r.string("secret"))
  }
}

extension WebhooksCreateRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    var params: JSONObject = ["app": .string(app), "url": .string(url), "events": .array(events.map { .string($0) })]
    if let secret { params["secret"] = .string(secret) }
    return .object(params)
  }
}
