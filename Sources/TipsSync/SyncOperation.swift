public import TipsEngine
public import TipsJSON

/// One change a device sends to the account's other devices: what `tipsd.ops` holds in PostgreSQL and the local
/// `sync_outbox` holds until PostgreSQL has committed it.
///
/// Operations carry *state*, not deltas, wherever the merge allows (a device's cumulative display counter, its
/// cumulative donation count, a parameter's value), so a newer one supersedes an older one of the same register: the
/// outbox can merge them, and a device that missed one loses nothing.
public struct SyncOperation: Sendable, Equatable {
  /// The device that made it.
  public var device: String
  /// The device's own sequence number (strictly increasing per device): with `device`, the operation's identity —
  /// PostgreSQL refuses a second copy, so a push repeated after a crash is harmless.
  public var seq: Int64
  /// When it was made.
  public var hlc: HLC
  /// The datastore reset (its HLC) this operation comes after, as far as its device knew; ``HLC/zero`` for none.
  /// An operation of an older epoch than the account's newest reset is void.
  public var epoch: HLC
  public var body: Body

  public enum Body: Sendable, Equatable {
    /// `datastore/reset`: tombstones the account (everything of an older epoch), on every device.
    case reset
    /// One donation, and the device's cumulative count of donations of that event in this epoch.
    case donation(event: String, at: Double, info: JSONObject?, lifetime: Int)
    /// A device's cumulative displays of one record (`tipId` or `tipId\u{1F}variant`) since the eligibility reset
    /// `generation` (the newest it knew; ``HLC/zero`` for none).
    case display(key: String, generation: HLC, count: Int, duration: Double, first: Double?, last: Double?)
    /// An invalidation of one record.
    case invalidate(key: String, reason: InvalidationReason, at: Double)
    /// `tips/resetEligibility` of one record: clears invalidations and display counters older than it.
    case resetEligibility(key: String)
    /// A parameter's value (last writer wins, by HLC then device id).
    case parameter(id: String, value: JSONValue)
    /// Hosted accounts only: the variant a tip is assigned (last writer wins, by HLC then device id). Devices keep
    /// their own assignments and skip it.
    case variant(tip: String, variant: String)
    /// Hosted accounts only: a display started the display-frequency cooldown at `at` (the latest start wins).
    /// Devices keep their own cooldown and skip it.
    case cooldown(at: Double)
    /// Hosted accounts only: a held-out tip's counterfactual exposure opened at `since` (nil: it closed), last writer
    /// wins — so a node that loads the account keeps the instant it opened. Devices keep their own and skip it.
    case exposure(tip: String, variant: String, since: Double?)
  }

  public init(device: String, seq: Int64, hlc: HLC, epoch: HLC, body: Body) {
    self.device = device
    self.seq = seq
    self.hlc = hlc
    self.epoch = epoch
    self.body = body
  }

  /// The kind's name on the wire.
  public var kind: String {
    switch body {
    case .reset: "reset"
    case .donation: "donation"
    case .display: "display"
    case .invalidate: "invalidate"
    case .resetEligibility: "resetEligibility"
    case .parameter: "parameter"
    case .variant: "variant"
    case .cooldown: "cooldown"
    case .exposure: "exposure"
    }
  }

  // MARK: JSON

  /// The payload stored in `tipsd.ops.op` and `sync_outbox.op` (device and seq are columns of their own):
  /// `{"hlc": N, "epoch": N, "kind": K, …kind's members}`.
  public var payload: String {
    // Written straight to bytes, members in the order they always had (#47: every hosted change makes one, and
    // building a `JSONObject` first cost five times the writing).
    var writer = JSONWriter(reservingCapacity: 160)
    writer.beginObject()
    writer.key(literal: "hlc")
    writer.writeInt(hlc.rawValue)
    writer.key(literal: "epoch")
    writer.writeInt(epoch.rawValue)
    writer.key(literal: "kind")
    writer.writeString(kind)
    switch body {
    case .reset:
      break
    case .donation(let event, let at, let info, let lifetime):
      writer.key(literal: "event")
      writer.writeString(event)
      writer.key(literal: "at")
      writer.writeDouble(at)
      if let info {
        writer.key(literal: "info")
        writer.write(.object(info))
      }
      writer.key(literal: "lifetime")
      writer.writeInt(lifetime)
    case .display(let key, let generation, let count, let duration, let first, let last):
      writer.key(literal: "key")
      writer.writeString(key)
      writer.key(literal: "generation")
      writer.writeInt(generation.rawValue)
      writer.key(literal: "count")
      writer.writeInt(count)
      writer.key(literal: "duration")
      writer.writeDouble(duration)
      if let first {
        writer.key(literal: "first")
        writer.writeDouble(first)
      }
      if let last {
        writer.key(literal: "last")
        writer.writeDouble(last)
      }
    case .invalidate(let key, let reason, let at):
      writer.key(literal: "key")
      writer.writeString(key)
      writer.key(literal: "reason")
      writer.writeString(reason.rawValue)
      writer.key(literal: "at")
      writer.writeDouble(at)
    case .resetEligibility(let key):
      writer.key(literal: "key")
      writer.writeString(key)
    case .parameter(let id, let value):
      writer.key(literal: "id")
      writer.writeString(id)
      writer.key(literal: "value")
      writer.write(value)
    case .variant(let tip, let variant):
      writer.key(literal: "tip")
      writer.writeString(tip)
      writer.key(literal: "variant")
      writer.writeString(variant)
    case .cooldown(let at):
      writer.key(literal: "at")
      writer.writeDouble(at)
    case .exposure(let tip, let variant, let since):
      writer.key(literal: "tip")
      writer.writeString(tip)
      writer.key(literal: "variant")
      writer.writeString(variant)
      writer.key(literal: "since")
      if let since { writer.writeDouble(since) } else { writer.writeNull() }
    }
    writer.endObject()
    return String(decoding: writer.bytes, as: UTF8.self)
  }

  /// Decodes a payload; nil for one this build does not understand (a newer tipsd's kind), which is skipped.
  public init?(device: String, seq: Int64, payload: String) {
    guard let value = try? JSONParser.parse(payload), case .object(let object) = value,
      let hlc = object["hlc"]?.intValue, let epoch = object["epoch"]?.intValue, let kind = object["kind"]?.stringValue
    else { return nil }
    func string(_ key: String) -> String? { object[key]?.stringValue }
    func number(_ key: String) -> Double? { object[key]?.doubleValue }
    let body: Body
    switch kind {
    case "reset":
      body = .reset
    case "donation":
      guard let event = string("event"), let at = number("at"), let lifetime = object["lifetime"]?.intValue else {
        return nil
      }
      body = .donation(event: event, at: at, info: object["info"]?.objectValue, lifetime: Int(lifetime))
    case "display":
      guard let key = string("key"), let generation = object["generation"]?.intValue,
        let count = object["count"]?.intValue, let duration = number("duration")
      else { return nil }
      body = .display(
        key: key, generation: HLC(rawValue: generation), count: Int(count), duration: duration, first: number("first"),
        last: number("last"))
    case "invalidate":
      guard let key = string("key"), let reason = string("reason").flatMap(InvalidationReason.init(rawValue:)),
        let at = number("at")
      else { return nil }
      body = .invalidate(key: key, reason: reason, at: at)
    case "resetEligibility":
      guard let key = string("key") else { return nil }
      body = .resetEligibility(key: key)
    case "parameter":
      guard let id = string("id"), let value = object["value"] else { return nil }
      body = .parameter(id: id, value: value)
    case "variant":
      guard let tip = string("tip"), let variant = string("variant") else { return nil }
      body = .variant(tip: tip, variant: variant)
    case "cooldown":
      guard let at = number("at") else { return nil }
      body = .cooldown(at: at)
    case "exposure":
      guard let tip = string("tip"), let variant = string("variant") else { return nil }
      body = .exposure(tip: tip, variant: variant, since: number("since"))
    default:
      return nil
    }
    self.init(device: device, seq: seq, hlc: HLC(rawValue: hlc), epoch: HLC(rawValue: epoch), body: body)
  }
}
