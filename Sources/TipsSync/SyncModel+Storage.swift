import TipsEngine
import TipsJSON
import TipsRecords

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
      if let register = Self.decodeRegister(row.value) { parameters[row.key] = register }
    case Kind.variant:
      if let register = Self.decodeRegister(row.value), register.value.stringValue != nil {
        variants[row.key] = register
      }
    case Kind.cooldown:
      if let at = (try? JSONParser.parse(row.value))?.doubleValue { cooldown = at }
    case Kind.exposure:
      if let register = Self.decodeRegister(row.value), register.value["variant"]?.stringValue != nil {
        exposures[row.key] = register
      }
    default:
      break
    }
  }

  /// `sync_state.kind` values.
  package enum Kind {
    package static let lifetime = "lifetime"
    package static let display = "display"
    package static let eligibility = "eligibility"
    package static let invalidations = "invalidations"
    package static let parameter = "parameter"
    package static let variant = "variant"
    package static let cooldown = "cooldown"
    package static let exposure = "exposure"
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

  // MARK: Row values

  package static func encode(_ list: [Invalidation]) -> String {
    JSONValue.array(
      list.map {
        .object([
          "hlc": .int($0.hlc.rawValue), "device": .string($0.device), "reason": .string($0.reason.rawValue),
          "at": .double($0.at),
        ])
      }
    ).jsonString
  }

  package static func encode(_ counter: DisplayCounter) -> String {
    var object: JSONObject = [
      "generation": .int(counter.generation.rawValue), "count": .int(Int64(counter.count)),
      "duration": .double(counter.duration), "seq": .int(counter.seq),
    ]
    if let first = counter.first { object["first"] = .double(first) }
    if let last = counter.last { object["last"] = .double(last) }
    return JSONValue.object(object).jsonString
  }

  /// A register's `sync_state` value: `{"hlc", "device", "value"}`.
  package static func encode(_ register: ParameterRegister) -> String {
    let value: JSONValue = [
      "hlc": .int(register.hlc.rawValue), "device": .string(register.device), "value": register.value,
    ]
    return value.jsonString
  }

  static func decodeRegister(_ text: String) -> ParameterRegister? {
    guard let value = try? JSONParser.parse(text), let hlc = value["hlc"]?.intValue,
      let device = value["device"]?.stringValue, let stored = value["value"]
    else { return nil }
    return ParameterRegister(hlc: HLC(rawValue: hlc), device: device, value: stored)
  }
}
