public import TipsJSON

/// `webhooks/list` (hosted mode, admin only): the endpoints of `app` (every app's without it), secrets left out.
public struct WebhooksListRequest: RequestType, Hashable {
  public static let method = "webhooks/list"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [.optional("app")]

  public var app: String?

  public init(app: String? = nil) { self.app = app }

  public init(from p: Params) throws(ResponseError) { app = try p.optionalString("app") }

  public struct Endpoint: Hashable, Sendable {
    public var id: Int64
    public var app: String
    public var url: String
    public var events: [String]
    public var createdAt: Double
    /// When delivery to it was given up on (its oldest event undelivered for a day), and why.
    public var disabledAt: Double?
    public var disabledReason: String?
    /// Deliveries not made yet.
    public var pending: Int
    public var lastResult: String?

    public init(
      id: Int64, app: String, url: String, events: [String], createdAt: Double, disabledAt: Double?,
      disabledReason: String?, pending: Int, lastResult: String?
    ) {
      self.id = id
      self.app = app
      self.url = url
      self.events = events
      self.createdAt = createdAt
      self.disabledAt = disabledAt
      self.disabledReason = disabledReason
      self.pending = pending
      self.lastResult = lastResult
    }
  }

  public struct Response: ResultValue, Hashable {
    public var webhooks: [Endpoint]

    public init(webhooks: [Endpoint]) { self.webhooks = webhooks }

    public static let shape = ResultShape.object(ObjectShape(["webhooks"]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("webhooks")
      writer.beginArray()
      for item in webhooks {
        writer.beginObject()
        writer.key("id")
        writer.writeInt(item.id)
        writer.key("app")
        writer.writeString(item.app)
        writer.key("url")
        writer.writeString(item.url)
        writer.key("events")
        writer.beginArray()
        for event in item.events { writer.writeString(event) }
        writer.endArray()
        writer.key("createdAt")
        writer.writeDouble(item.createdAt)
        writer.key("disabledAt")
        if let at = item.disabledAt { writer.writeDouble(at) } else { writer.writeNull() }
        writer.key("disabledReason")
        if let reason = item.disabledReason { writer.writeString(reason) } else { writer.writeNull() }
        writer.key("pending")
        writer.writeInt(item.pending)
        writer.key("lastResult")
        if let result = item.lastResult { writer.writeString(result) } else { writer.writeNull() }
        writer.endObject()
      }
      writer.endArray()
      writer.endObject()
    }
  }
}

extension WebhooksListRequest.Endpoint: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      id: try r.int64("id"), app: try r.string("app"), url: try r.string("url"), events: try r.strings("events"),
      createdAt: try r.double("createdAt"), disabledAt: try r.optionalDouble("disabledAt"),
      disabledReason: try r.optionalString("disabledReason"), pending: try r.int("pending"),
      lastResult: try r.optionalString("lastResult"))
  }
}

extension WebhooksListRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(webhooks: try r.decodeArray("webhooks", of: WebhooksListRequest.Endpoint.self))
  }
}

extension WebhooksListRequest: EncodableRequest {
  public var encodedParams: JSONValue? { app.map { ["app": .string($0)] } ?? .object([:]) }
}
