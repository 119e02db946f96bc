public import TipsJSON

/// `sync/push` (hosted mode): a device daemon's operations (`tipsd serve --sync wss://…`), stored in the account's
/// operations as that device's — idempotent by (device, seq) — in the node's group commit, and merged into the account
/// the node holds. Answered with the account's last cursor once PostgreSQL committed them.
///
/// The operations are untrusted: each `op` is decoded with the sync layer's decoder and checked
/// (`TipsSync.SyncOperation.untrusted`) on the node; this type only bounds their number and size.
public struct SyncPushRequest: RequestType, Hashable {
  public static let method = "sync/push"
  public static let traits: MethodTraits = MethodTraits(isChange: true)
  public static let params: [ParamSpec] = [.required("device"), .required("ops")]
  /// At most this many operations in one push.
  public static let maxOperations = 500
  /// At most this many bytes in one operation's JSON.
  public static let maxOperationBytes = 16_384
  /// What every device id pushed through a hosted node begins with: a node's own operations are stored under its
  /// `--node` name, which may not begin with it, so a device can never write as a node.
  public static let devicePrefix = "device:"
  /// The longest device id.
  public static let maxDeviceBytes = 128

  public struct Operation: Hashable, Sendable {
    public var seq: Int64
    /// The operation's JSON (`{"hlc", "epoch", "kind", …}`), as sent.
    public var op: JSONObject

    public init(seq: Int64, op: JSONObject) {
      self.seq = seq
      self.op = op
    }
  }

  public var device: String
  public var ops: [Operation]

  public init(device: String, ops: [Operation]) {
    self.device = device
    self.ops = ops
  }

  public init(from p: Params) throws(ResponseError) {
    device = try p.string("device")
    if let problem = Self.deviceProblem(device) { throw p.invalid("device", problem) }
    let items = try p.array("ops")
    guard items.count <= Self.maxOperations else {
      throw p.invalid("ops", "at most \(Self.maxOperations) operations in one push (got \(items.count))")
    }
    var ops: [Operation] = []
    ops.reserveCapacity(items.count)
    var previous: Int64 = 0
    for (index, item) in items.enumerated() {
      let entry = try p.element("ops", index, of: item)
      for key in entry.object.keys where key != "seq" && key != "op" {
        throw entry.invalid(key, "unknown member (expected seq, op)")
      }
      let seq = try entry.int("seq")
      guard seq > 0 else { throw entry.invalid("seq", "must be a sequence number of at least 1 (got \(seq))") }
      guard Int64(seq) > previous else {
        throw entry.invalid("seq", "must be greater than the operation's before it (\(previous)); got \(seq)")
      }
      previous = Int64(seq)
      let op = try entry.object("op")
      let bytes = JSONValue.object(op).jsonString.utf8.count
      guard bytes <= Self.maxOperationBytes else {
        throw entry.invalid("op", "at most \(Self.maxOperationBytes) bytes of JSON (got \(bytes))")
      }
      ops.append(Operation(seq: Int64(seq), op: op))
    }
    self.ops = ops
  }

  /// Why `device` cannot be a device id pushed through a hosted node (nil: it can).
  public static func deviceProblem(_ device: String) -> String? {
    guard device.hasPrefix(devicePrefix), device.utf8.count > devicePrefix.utf8.count else {
      return "must begin with \"\(devicePrefix)\" and name the device (a node's own id cannot be used)"
    }
    guard device.utf8.count <= maxDeviceBytes else { return "at most \(maxDeviceBytes) bytes" }
    guard device.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
      return "printable ASCII without spaces only"
    }
    return nil
  }

  public struct Response: ResultValue, Hashable {
    /// The account's last operation cursor once the push was committed.
    public var cursor: Int64

    public init(cursor: Int64) { self.cursor = cursor }

    public static let shape = ResultShape.object(ObjectShape(["cursor"]), schema: "SyncPushResult")

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("cursor")
      writer.writeInt(cursor)
      writer.endObject()
    }
  }
}

extension SyncPushRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(cursor: try r.int64("cursor"))
  }
}

extension SyncPushRequest: EncodableRequest {
  public var encodedParams: JSONValue? {
    .object([
      "device": .string(device),
      "ops": .array(ops.map { .object(["seq": .int($0.seq), "op": .object($0.op)]) }),
    ])
  }
}
