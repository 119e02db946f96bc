public import TipsJSON

/// `sync/pull` (hosted mode): a device daemon's catch-up (`tipsd serve --sync wss://…`) — the account's operations
/// after cursor `after` (every device's and node's, its own included: a device skips those), or, when the device is
/// behind the operations the fleet keeps, the account's snapshot to merge instead. The device's cursor is registered
/// (operations it has not read are kept for it, `--ops-device-days`), and the session is subscribed to `sync/changed`:
/// it hears whenever the account's cursor moves.
public struct SyncPullRequest: RequestType, Hashable {
  public static let method = "sync/pull"
  public static let params: [ParamSpec] = [.required("device"), .optional("after"), .optional("limit")]
  public static let defaultLimit = 1_000
  public static let maxLimit = 1_000

  public var device: String
  public var after: Int64
  public var limit: Int

  public init(device: String, after: Int64 = 0, limit: Int = SyncPullRequest.defaultLimit) {
    self.device = device
    self.after = after
    self.limit = limit
  }

  public init(from p: Params) throws(ResponseError) {
    device = try p.string("device")
    if let problem = SyncPushRequest.deviceProblem(device) { throw p.invalid("device", problem) }
    let after = try p.optionalInt("after") ?? 0
    guard after >= 0 else { throw p.invalid("after", "must be a cursor (an integer of at least 0)") }
    self.after = Int64(after)
    limit = try p.optionalInt("limit") ?? Self.defaultLimit
    guard (1...Self.maxLimit).contains(limit) else {
      throw p.invalid("limit", "must be from 1 to \(Self.maxLimit) (got \(limit))")
    }
  }

  /// One stored operation.
  public struct Operation: Hashable, Sendable {
    public var cursor: Int64
    public var device: String
    public var seq: Int64
    public var op: JSONObject

    public init(cursor: Int64, device: String, seq: Int64, op: JSONObject) {
      self.cursor = cursor
      self.device = device
      self.seq = seq
      self.op = op
    }
  }

  public struct Response: ResultValue, Hashable {
    /// The operations after `after`, in cursor order (empty when `snapshot` is set).
    public var operations: [Operation]
    /// The account's snapshot (its state as of `cursor`) when the device was behind the operations kept; null else.
    public var snapshot: JSONValue?
    /// Where the next pull starts: the last operation's cursor, the snapshot's, or `after` when nothing came.
    public var cursor: Int64
    /// Whether more operations may follow at once (a full page, or a snapshot).
    public var more: Bool
    /// The session's `sync/changed` subscription.
    public var subscription: String

    public init(operations: [Operation], snapshot: JSONValue?, cursor: Int64, more: Bool, subscription: String) {
      self.operations = operations
      self.snapshot = snapshot
      self.cursor = cursor
      self.more = more
      self.subscription = subscription
    }

    public static let shape = ResultShape.object(
      ObjectShape(["operations", "snapshot", "cursor", "more", "subscription"]), schema: "SyncPullResult")

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("operations")
      writer.beginArray()
      for item in operations {
        writer.beginObject()
        writer.key("cursor")
        writer.writeInt(item.cursor)
        writer.key("device")
        writer.writeString(item.device)
        writer.key("seq")
        writer.writeInt(item.seq)
        writer.key("op")
        writer.write(.object(item.op))
        writer.endObject()
      }
      writer.endArray()
      writer.key("snapshot")
      writer.write(snapshot ?? .null)
      writer.key("cursor")
      writer.writeInt(cursor)
      writer.key("more")
      writer.writeBool(more)
      writer.key("subscription")
      writer.writeString(subscription)
      writer.endObject()
    }
  }
}

extension SyncPullRequest.Operation: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      cursor: try r.int64("cursor"), device: try r.string("device"), seq: try r.int64("seq"),
      op: try { () throws(ResultDecodingError) -> JSONObject in
        guard case .object(let object) = try r.value("op") else { throw r.invalid("op", "must be an object") }
        return object
      }())
  }
}

extension SyncPullRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    let snapshot = r.optionalValue("snapshot")
    self.init(
      operations: try r.decodeArray("operations", of: SyncPullRequest.Operation.self),
      snapshot: snapshot == .null ? nil : snapshot, cursor: try r.int64("cursor"), more: try r.bool("more"),
      subscription: try r.string("subscription"))
  }
}

extension SyncPullRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    .object(["device": .string(device), "after": .int(after), "limit": .int(Int64(limit))])
  }
}
