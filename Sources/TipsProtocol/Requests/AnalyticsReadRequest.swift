public import TipsJSON

/// `analytics/read`: up to `limit` committed lifecycle events after cursor `after`, oldest first (pull instead of
/// `analytics/subscribe`).
public struct AnalyticsReadRequest: RequestType, Hashable {
  public static let method = "analytics/read"
  public static let traits: MethodTraits = MethodTraits(scope: .fleetWide)
  public static let params: [ParamSpec] = [.optional("after"), .optional("limit")]
  public static let defaultLimit = 100
  public static let maxLimit = 1_000

  public var after: Int64
  public var limit: Int

  public init(after: Int64 = 0, limit: Int = AnalyticsReadRequest.defaultLimit) {
    self.after = after
    self.limit = limit
  }

  public init(from p: Params) throws(ResponseError) {
    let after = try p.optionalInt("after") ?? 0
    guard after >= 0 else { throw p.invalid("after", "must be a cursor (an integer of at least 0)") }
    self.after = Int64(after)
    limit = try p.optionalInt("limit") ?? Self.defaultLimit
    guard (1...Self.maxLimit).contains(limit) else {
      throw p.invalid("limit", "must be from 1 to \(Self.maxLimit) (got \(limit))")
    }
  }

  public struct Response: ResultValue, Hashable {
    public var events: [AnalyticsEventInfo]
    /// The cursor to pass as `after` next time: the last event's, or `after` when none was returned.
    public var next: Int64
    /// The newest cursor assigned so far.
    public var head: Int64
    /// The oldest cursor still kept (null: none).
    public var oldest: Int64?

    public init(events: [AnalyticsEventInfo], next: Int64, head: Int64, oldest: Int64?) {
      self.events = events
      self.next = next
      self.head = head
      self.oldest = oldest
    }

    public static let shape = ResultShape.object(
      ObjectShape(["events", "next", "head", "oldest"]), schema: "AnalyticsPage")

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("events")
      writer.beginArray()
      for event in events { event.write(to: &writer) }
      writer.endArray()
      writer.key("next")
      writer.writeInt(next)
      writer.key("head")
      writer.writeInt(head)
      writer.key("oldest")
      if let oldest { writer.writeInt(oldest) } else { writer.writeNull() }
      writer.endObject()
    }
  }
}

extension AnalyticsReadRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      events: try r.decodeArray("events", of: AnalyticsEventInfo.self), next: try r.int64("next"),
      head: try r.int64("head"), oldest: try r.optionalInt64("oldest"))
  }
}
