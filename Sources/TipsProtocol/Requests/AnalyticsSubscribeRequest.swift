public import TipsJSON

/// `analytics/subscribe`: lifecycle events as `analytics/event` notifications — those after cursor `after` still
/// kept (replayed in cursor order, at the pace the client reads), then every new one; without `after`, new ones
/// only.
public struct AnalyticsSubscribeRequest: RequestType, Hashable {
  public static let method = "analytics/subscribe"
  public static let traits: MethodTraits = MethodTraits(scope: .fleetWide)
  public static let params: [ParamSpec] = [.optional("after")]

  /// Replay from the event after this cursor (0: everything kept); nil: live events only.
  public var after: Int64?

  public init(after: Int64? = nil) { self.after = after }

  public init(from p: Params) throws(ResponseError) {
    if let value = try p.optionalInt("after") {
      guard value >= 0 else { throw p.invalid("after", "must be a cursor (an integer of at least 0)") }
      after = Int64(value)
    }
  }

  public struct Response: ResultValue, Hashable {
    public var subscription: String
    /// The newest cursor assigned so far (0: none yet).
    public var head: Int64
    /// The oldest cursor still kept (null: none); a replay from before it has lost what was pruned.
    public var oldest: Int64?

    public init(subscription: String, head: Int64, oldest: Int64?) {
      self.subscription = subscription
      self.head = head
      self.oldest = oldest
    }

    public static let shape = ResultShape.object(
      ObjectShape(["subscription", "head", "oldest"]), schema: "AnalyticsSubscription")

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("subscription")
      writer.writeString(subscription)
      writer.key("head")
      writer.writeInt(head)
      writer.key("oldest")
      if let oldest { writer.writeInt(oldest) } else { writer.writeNull() }
      writer.endObject()
    }
  }
}

extension AnalyticsSubscribeRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      subscription: try r.string("subscription"), head: try r.int64("head"), oldest: try r.optionalInt64("oldest"))
  }
}
