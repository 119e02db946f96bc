public import TipsJSON

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

extension WebhooksDeleteRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(id: try r.int64("id"), deleted: try r.bool("deleted"))
  }
}

extension WebhooksDeleteRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["app": .string(app), "id": .int(id)] }
}
