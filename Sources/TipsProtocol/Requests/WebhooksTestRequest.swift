public import TipsJSON

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

extension WebhooksTestRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) { self.init(event: try r.int64("event")) }
}

extension WebhooksTestRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app), "id": .int(id)] }
}
