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

/// `webhooks/delete` (hosted mode, admin only): removes an endpoint of `app` and its undelivered deliveries.
public struct WebhooksDeleteRequest: RequestType, Hashable {
  public static let method = "webhooks/delete"
  public static let traits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [.required("app"), .required("id")]

  public var app: String
  public var id: Int64

  public init(app: String, id: Int64) {
    self.app = app
    self.id = id
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    id = Int64(try p.int("id"))
  }

  public struct Response: ResultValue, Hashable {
    public var id: Int64
    public var deleted: Bool

    public init(id: Int64, deleted: Bool) {
      self.id = id
      self.deleted = deleted
    }

    public static let shape = ResultShape.object(ObjectShape(["id", "deleted"]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("id")
      writer.writeInt(id)
      writer.key("deleted")
      writer.writeBool(deleted)
      writer.endObject()
    }
  }
}

/// `webhooks/test` (hosted mode, admin only): enqueues a `webhook.test` event for one endpoint of `app`.
public struct WebhooksTestRequest: RequestType, Hashable {
  public static let method = "webhooks/test"
  public static let traits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [.required("app"), .required("id")]

  public var app: String
  public var id: Int64

  public init(app: String, id: Int64) {
    self.app = app
    self.id = id
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    id = Int64(try p.int("id"))
  }

  public struct Response: ResultValue, Hashable {
    /// The event's id (its `webhook-id` is `evt_<event>`).
    public var event: Int64

    public init(event: Int64) { self.event = event }

    public static let shape = ResultShape.object(ObjectShape(["event"]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("event")
      writer.writeInt(event)
      writer.endObject()
    }
  }
}

/// `webhooks/replay` (hosted mode, admin only): delivers every event of `app` after event `after` again, to each of
/// the app's enabled endpoints subscribed to it, under the same webhook ids, oldest first.
public struct WebhooksReplayRequest: RequestType, Hashable {
  public static let method = "webhooks/replay"
  public static let traits = MethodTraits(isChange: true, scope: .accountFree)
  public static let params: [ParamSpec] = [.required("app"), .required("after")]

  public var app: String
  public var after: Int64

  public init(app: String, after: Int64) {
    self.app = app
    self.after = after
  }

  public init(from p: Params) throws(ResponseError) {
    app = try p.string("app")
    after = Int64(try p.int("after"))
    guard after >= 0 else { throw p.invalid("after", "must not be negative (got \(after))") }
  }

  public struct Response: ResultValue, Hashable {
    /// Deliveries queued.
    public var queued: Int

    public init(queued: Int) { self.queued = queued }

    public static let shape = ResultShape.object(ObjectShape(["queued"]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("queued")
      writer.writeInt(queued)
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

extension WebhooksDeleteRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(id: try r.int64("id"), deleted: try r.bool("deleted"))
  }
}

extension WebhooksTestRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) { self.init(event: try r.int64("event")) }
}

extension WebhooksReplayRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) { self.init(queued: try r.int("queued")) }
}

extension WebhooksCreateRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    var params: JSONObject = ["app": .string(app), "url": .string(url), "events": .array(events.map { .string($0) })]
    if let secret { params["secret"] = .string(secret) }
    return .object(params)
  }
}

extension WebhooksListRequest: EncodableRequest {
  public var encodedParams: JSONValue? { app.map { ["app": .string($0)] } ?? .object([:]) }
}

extension WebhooksDeleteRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app), "id": .int(id)] }
}

extension WebhooksTestRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app), "id": .int(id)] }
}

extension WebhooksReplayRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app), "after": .int(after)] }
}
