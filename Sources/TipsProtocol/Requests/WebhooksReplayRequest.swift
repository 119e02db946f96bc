public import TipsJSON

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

extension WebhooksReplayRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) { self.init(queued: try r.int("queued")) }
}

extension WebhooksReplayRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app), "after": .int(after)] }
}
