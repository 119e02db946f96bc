import TipsEngine
import TipsJSON

/// JSON shapes of the protocol's data (protocol/README.md).
enum Encoding {
  static func status(_ status: TipStatus) -> (name: String, reason: String?) {
    switch status {
    case .pending: ("pending", nil)
    case .available: ("available", nil)
    case .invalidated(let reason): ("invalidated", reason.rawValue)
    }
  }

  /// `Action[]`: every action with its index. Always an array, even for one action (seed 000).
  static func actions(_ actions: [TipAction]) -> JSONValue {
    .array(actions.enumerated().map { index, action in
      .object(["id": .string(action.id), "title": .string(action.title), "index": .int(Int64(index))])
    })
  }

  /// `TipContent`: what a frontend draws, in the copy best matching `locale` (`locale` names the localization
  /// used, or is null when the tip's own copy is shown).
  static func content(_ definition: TipDefinition?, id: String, locale: String?) -> JSONValue {
    guard let definition else {
      return .object(["id": .string(id), "title": "", "message": nil, "image": nil, "actions": [], "locale": nil])
    }
    let key = definition.localizationKey(for: locale)
    let copy = key == nil ? definition : definition.localized(for: locale)
    return .object([
      "id": .string(copy.id),
      "title": .string(copy.title),
      "message": copy.message.map(JSONValue.string) ?? .null,
      "image": copy.image.map(JSONValue.string) ?? .null,
      "actions": actions(copy.actions),
      "locale": key.map(JSONValue.string) ?? .null,
    ])
  }

  /// `TipState`: status, shouldDisplay, budgets and content.
  static func tipState(_ state: TipState, engine: Engine, locale: String?) -> JSONValue {
    let (name, reason) = status(state.status)
    let record = engine.record(of: state.id)
    var object: JSONObject = [
      "id": .string(state.id),
      "shouldDisplay": .bool(state.shouldDisplay),
      "status": .string(name),
    ]
    if let reason { object["reason"] = .string(reason) }
    object["displayCount"] = .int(Int64(record.displayCount))
    object["displayedDuration"] = .double(record.displayedDuration)
    object["tip"] = content(engine.definition(of: state.id), id: state.id, locale: locale)
    return .object(object)
  }
}
