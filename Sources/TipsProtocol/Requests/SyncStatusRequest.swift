public import TipsJSON

/// `sync/status`: how sync across devices is doing — the connection, the outbox (operations waiting for PostgreSQL)
/// and its lag, the last push and pull. `enabled: false` (and nulls) on a daemon started without `--sync`.
public struct SyncStatusRequest: EncodableRequest, Hashable {
  public static let method = "sync/status"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = []
  public init() {}
  public init(from p: Params) throws(ResponseError) {}

  public struct Response: ResultValue, Hashable {
    public var enabled: Bool
    /// `disabled`, `connecting`, `connected`, `disconnected` (retrying), `incompatible` (a newer schema), `stopped`.
    public var state: String
    /// The server, password redacted.
    public var server: String?
    public var account: String?
    public var device: String?
    /// Operations waiting for PostgreSQL.
    public var outbox: Int
    public var outboxLimit: Int?
    /// Seconds since the oldest waiting operation was made (0 when none waits).
    public var lagSeconds: Double
    /// The last `tipsd.ops` cursor merged.
    public var cursor: Int64
    /// Wall-clock seconds since the epoch of the last successful push and pull.
    public var lastPushAt: Double?
    public var lastPullAt: Double?
    /// The last connection error, password scrubbed (null once reconnected).
    public var lastError: String?

    public init(
      enabled: Bool, state: String, server: String?, account: String?, device: String?, outbox: Int, outboxLimit: Int?,
      lagSeconds: Double, cursor: Int64, lastPushAt: Double?, lastPullAt: Double?, lastError: String?
    ) {
      self.enabled = enabled
      self.state = state
      self.server = server
      self.account = account
      self.device = device
      self.outbox = outbox
      self.outboxLimit = outboxLimit
      self.lagSeconds = lagSeconds
      self.cursor = cursor
      self.lastPushAt = lastPushAt
      self.lastPullAt = lastPullAt
      self.lastError = lastError
    }

    /// A daemon without `--sync`.
    public static let disabled = Response(
      enabled: false, state: "disabled", server: nil, account: nil, device: nil, outbox: 0, outboxLimit: nil,
      lagSeconds: 0, cursor: 0, lastPushAt: nil, lastPullAt: nil, lastError: nil)

    public static let shape = ResultShape.object(
      ObjectShape([
        "enabled", "state", "server", "account", "device", "outbox", "outboxLimit", "lagSeconds", "cursor",
        "lastPushAt", "lastPullAt", "lastError",
      ]), schema: nil)

    public func write(to writer: inout JSONWriter) {
      func optionalDouble(_ value: Double?) {
        if let value { writer.writeDouble(value) } else { writer.writeNull() }
      }
      writer.beginObject()
      writer.key("enabled")
      writer.writeBool(enabled)
      writer.key("state")
      writer.writeString(state)
      writer.key("server")
      writer.writeOptionalString(server)
      writer.key("account")
      writer.writeOptionalString(account)
      writer.key("device")
      writer.writeOptionalString(device)
      writer.key("outbox")
      writer.writeInt(outbox)
      writer.key("outboxLimit")
      if let outboxLimit { writer.writeInt(outboxLimit) } else { writer.writeNull() }
      writer.key("lagSeconds")
      writer.writeDouble(lagSeconds)
      writer.key("cursor")
      writer.writeInt(cursor)
      writer.key("lastPushAt")
      optionalDouble(lastPushAt)
      writer.key("lastPullAt")
      optionalDouble(lastPullAt)
      writer.key("lastError")
      writer.writeOptionalString(lastError)
      writer.endObject()
    }
  }
}

extension SyncStatusRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      enabled: try r.bool("enabled"), state: try r.string("state"), server: try r.optionalString("server"),
      account: try r.optionalString("account"), device: try r.optionalString("device"), outbox: try r.int("outbox"),
      outboxLimit: try r.optionalInt("outboxLimit"), lagSeconds: try r.double("lagSeconds"),
      cursor: try r.int64("cursor"), lastPushAt: try r.optionalDouble("lastPushAt"),
      lastPullAt: try r.optionalDouble("lastPullAt"), lastError: try r.optionalString("lastError"))
  }
}

extension SyncStatusRequest {
  public var encodedParams: JSONValue? { nil }
}
