import TipsEngine
import TipsJSON
import TipsStore

// How the model is kept in the datastore: the `sync_state` rows it is loaded from and the `sync_meta` keys.

extension SyncModel {
  /// Restores one `sync_state` row of the datastore into the model (a row this build cannot read is skipped).
  func load(_ row: SyncStateRow) {
    switch row.kind {
    case Kind.lifetime:
      if let count = Int(row.value) { lifetimes[row.key, default: [:]][row.device] = count }
    case Kind.display:
      guard let value = try? JSONParser.parse(row.value), let generation = value["generation"]?.intValue,
        let count = value["count"]?.intValue, let duration = value["duration"]?.doubleValue
      else { return }
      displays[row.key, default: [:]][row.device] = DisplayCounter(
        generation: HLC(rawValue: generation), count: Int(count), duration: duration,
        first: value["first"]?.doubleValue, last: value["last"]?.doubleValue, seq: value["seq"]?.intValue ?? 0)
    case Kind.eligibility:
      if let hlc = Int64(row.value) { eligibility[row.key] = HLC(rawValue: hlc) }
    case Kind.invalidations:
      guard let list = (try? JSONParser.parse(row.value))?.arrayValue else { return }
      invalidations[row.key] = list.compactMap { item in
        guard let hlc = item["hlc"]?.intValue, let device = item["device"]?.stringValue,
          let reason = item["reason"]?.stringValue.flatMap(InvalidationReason.init(rawValue:)),
          let at = item["at"]?.doubleValue
        else { return nil }
        return Invalidation(hlc: HLC(rawValue: hlc), device: device, reason: reason, at: at)
      }
    case Kind.parameter:
      guard let value = try? JSONParser.parse(row.value), let hlc = value["hlc"]?.intValue,
        let device = value["device"]?.stringValue, let stored = value["value"]
      else { return }
      parameters[row.key] = ParameterRegister(hlc: HLC(rawValue: hlc), device: device, value: stored)
    default:
      break
    }
  }

  /// `sync_state.kind` values.
  enum Kind {
    static let lifetime = "lifetime"
    static let display = "display"
    static let eligibility = "eligibility"
    static let invalidations = "invalidations"
    static let parameter = "parameter"
  }

  /// `sync_meta` keys.
  public enum MetaKey {
    public static let device = "device"
    public static let account = "account"
    public static let epoch = "epoch"
    public static let clock = "clock"
    public static let since = "since"
    public static let cursor = "cursor"
  }
}
