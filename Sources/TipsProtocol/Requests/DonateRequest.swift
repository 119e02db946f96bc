public import TipsJSON

/// `events/donate`: records one occurrence of an event, with optional flat associated values. Also accepts
/// positional params `[id, info?]`.
public struct DonateRequest: RequestType, Hashable {
  public static let method = "events/donate"
  public static let traits: MethodTraits = .syncedChange
  public static let params: [ParamSpec] = [.required("id"), .optional("info"), .optional("idempotencyKey")]
  public static let positionalParams = ["id", "info"]

  public var id: String
  public var info: JSONObject?

  public init(id: String, info: JSONObject? = nil) {
    self.id = id
    self.info = info
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    info = try p.optionalObject("info")
  }

  public struct Response: ResultValue, Hashable {
    /// Stored donations of the event after this one (the bounded history windows and filters read).
    public var count: Int
    /// Donations of the event over the app's life, this one included (what a plain `count` rule reads).
    public var lifetime: Int
    public init(count: Int, lifetime: Int) {
      self.count = count
      self.lifetime = lifetime
    }
    public static let shape = ResultShape.object(ObjectShape(["count", "lifetime"]), schema: nil)
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key(literal: "count")
      writer.writeInt(count)
      writer.key(literal: "lifetime")
      writer.writeInt(lifetime)
      writer.endObject()
    }
    /// The reply to an integer id (what the clients send) composed in one append: the hot path of a pipelined
    /// client. Any other id is written by ``write(to:)``.
    public func writeReply(id: RequestID?, to writer: inout JSONWriter) {
      guard case .int(let number)? = id else {
        OutgoingMessage.writeResult(id: id, to: &writer) { write(to: &$0) }
        return
      }
      // 54 bytes of literals and three integers of at most 20 bytes each.
      writer.appendComposed(capacity: 128) { composer in
        composer.literal(#"{"jsonrpc":"2.0","id":"#)
        composer.integer(number)
        composer.literal(#","result":{"count":"#)
        composer.integer(Int64(count))
        composer.literal(#","lifetime":"#)
        composer.integer(Int64(lifetime))
        composer.literal("}}")
      }
    }
  }
}

extension DonateRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(count: try r.int("count"), lifetime: try r.int("lifetime"))
  }
}
