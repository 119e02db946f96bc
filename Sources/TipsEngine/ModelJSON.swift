public import TipsJSON

// MARK: - Decoding helpers

/// Small helpers shared by every `init(json:path:)`: each failure names the JSON path it happened at.
enum JSONDecoding {
  static func join(_ path: String, _ key: String) -> String {
    path.isEmpty ? key : "\(path).\(key)"
  }

  static func fail(_ path: String, _ message: String) -> EngineError {
    .invalidDefinition(path: path.isEmpty ? "$" : path, message: message)
  }

  static func object(_ value: JSONValue, _ path: String) throws(EngineError) -> JSONObject {
    guard case .object(let object) = value else {
      throw fail(path, "expected an object, got \(value.typeName)")
    }
    return object
  }

  static func array(_ value: JSONValue, _ path: String) throws(EngineError) -> [JSONValue] {
    guard case .array(let array) = value else {
      throw fail(path, "expected an array, got \(value.typeName)")
    }
    return array
  }

  /// Rejects any key outside `allowed` (typos must not pass silently).
  static func checkKeys(_ object: JSONObject, _ allowed: [String], _ path: String, what: String = "")
    throws(EngineError)
  {
    for (key, _) in object where !allowed.contains(key) {
      throw fail(path, "unknown key \"\(key)\"\(what)")
    }
  }

  static func nonEmptyString(_ value: JSONValue, _ path: String) throws(EngineError) -> String {
    guard case .string(let string) = value, !string.isEmpty else {
      throw fail(path, "expected a non-empty string, got \(describe(value))")
    }
    return string
  }

  static func string(_ value: JSONValue, _ path: String) throws(EngineError) -> String {
    guard case .string(let string) = value else {
      throw fail(path, "expected a string, got \(value.typeName)")
    }
    return string
  }

  /// A required member.
  static func required(_ object: JSONObject, _ key: String, _ path: String) throws(EngineError) -> JSONValue {
    guard let value = object[key] else { throw fail(path, "missing required key \"\(key)\"") }
    return value
  }

  /// An optional member; `null` reads as absent.
  static func optional(_ object: JSONObject, _ key: String) -> JSONValue? {
    guard let value = object[key], !value.isNull else { return nil }
    return value
  }

  /// A short rendering of a value for error messages: its type, or the empty string.
  /// A number as itself, anything else by its type: error messages never echo a string from the input (a catalog
  /// may hold secrets).
  static func describeNumber(_ value: JSONValue) -> String {
    value.isNumber ? value.jsonString : describe(value)
  }

  static func describe(_ value: JSONValue) -> String {
    if case .string(let s) = value, s.isEmpty { return "an empty string" }
    return value.typeName
  }

  /// Whether a value is one a parameter may hold (Bool, Int, Double or String).
  static func isScalar(_ value: JSONValue) -> Bool {
    switch value {
    case .bool, .int, .double, .string: true
    case .null, .array, .object: false
    }
  }

  /// A number as JSON: `.int` when it is an exact integer, else `.double`.
  static func number(_ value: Double) -> JSONValue {
    if let exact = Int64(exactly: value) { return .int(exact) }
    return .double(value)
  }
}

/// The JSON type name used in parameter type errors: `bool`, `int`, `double`, `string`, `null`, `array`, `object`.
func parameterTypeName(_ value: JSONValue) -> String {
  switch value {
  case .null: "null"
  case .bool: "bool"
  case .int: "int"
  case .double: "double"
  case .string: "string"
  case .array: "array"
  case .object: "object"
  }
}

// MARK: - Tips

extension TipDefinition {
  static let jsonKeys = ["id", "title", "message", "image", "actions", "rules", "options", "localizations"]

  /// Decodes `{id, title, message?, image?, actions?: [{id, title}], rules?: [...], options?: {...}}`.
  /// Unknown keys, malformed rules and duplicate action ids are rejected with the offending path.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, Self.jsonKeys, path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    let title = try D.string(try D.required(object, "title", path), D.join(path, "title"))
    var message: String?
    if let value = D.optional(object, "message") { message = try D.string(value, D.join(path, "message")) }
    var image: String?
    if let value = D.optional(object, "image") { image = try D.string(value, D.join(path, "image")) }

    var actions: [TipAction] = []
    if let value = D.optional(object, "actions") {
      let actionsPath = D.join(path, "actions")
      var seen = Set<String>()
      for (index, element) in try D.array(value, actionsPath).enumerated() {
        let elementPath = "\(actionsPath)[\(index)]"
        let action = try TipAction(json: element, path: elementPath)
        guard seen.insert(action.id).inserted else {
          throw D.fail(D.join(elementPath, "id"), "duplicate action id \"\(action.id)\"")
        }
        actions.append(action)
      }
    }

    var rules: [Rule] = []
    if let value = D.optional(object, "rules") {
      let rulesPath = D.join(path, "rules")
      for (index, element) in try D.array(value, rulesPath).enumerated() {
        rules.append(try Rule(json: element, path: "\(rulesPath)[\(index)]"))
      }
    }

    var options = TipOptions()
    if let value = D.optional(object, "options") {
      options = try TipOptions(json: value, path: D.join(path, "options"))
    }

    var localizations: [String: TipLocalization] = [:]
    if let value = D.optional(object, "localizations") {
      let localizationsPath = D.join(path, "localizations")
      let actionIDs = Set(actions.map(\.id))
      for (locale, copy) in try D.object(value, localizationsPath) {
        let localePath = D.join(localizationsPath, locale)
        guard !locale.isEmpty, locale.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
          throw D.fail(localePath, "a locale must be a BCP 47 tag such as \"ja\" or \"zh-Hans\"")
        }
        localizations[locale] = try TipLocalization(json: copy, path: localePath, actionIDs: actionIDs)
      }
    }
    self.init(
      id: id, title: title, message: message, image: image, actions: actions, rules: rules, options: options,
      localizations: localizations)
  }

  /// The definition as JSON, in the shape ``init(json:path:)`` reads (`actions` and `rules` always present).
  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "title": .string(title)]
    if let message { object["message"] = .string(message) }
    if let image { object["image"] = .string(image) }
    object["actions"] = .array(actions.map(\.json))
    object["rules"] = .array(rules.map(\.json))
    object["options"] = options.json
    if !localizations.isEmpty {
      var copies = JSONObject()
      for locale in localizations.keys.sorted() { copies[locale] = localizations[locale]!.json }
      object["localizations"] = .object(copies)
    }
    return .object(object)
  }
}

extension TipLocalization {
  static let jsonKeys = ["title", "message", "actions"]

  /// Decodes `{title?, message?, actions?: {actionId: title}}`; action ids must be the tip's own.
  public init(json: JSONValue, path: String, actionIDs: Set<String>) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, Self.jsonKeys, path)
    var title: String?
    if let value = D.optional(object, "title") { title = try D.string(value, D.join(path, "title")) }
    var message: String?
    if let value = D.optional(object, "message") { message = try D.string(value, D.join(path, "message")) }
    var actionTitles: [String: String] = [:]
    if let value = D.optional(object, "actions") {
      let actionsPath = D.join(path, "actions")
      for (actionID, actionTitle) in try D.object(value, actionsPath) {
        guard actionIDs.contains(actionID) else {
          throw D.fail(D.join(actionsPath, actionID), "no action \"\(actionID)\" in this tip's actions")
        }
        actionTitles[actionID] = try D.string(actionTitle, D.join(actionsPath, actionID))
      }
    }
    self.init(title: title, message: message, actionTitles: actionTitles)
  }

  public var json: JSONValue {
    var object = JSONObject()
    if let title { object["title"] = .string(title) }
    if let message { object["message"] = .string(message) }
    if !actionTitles.isEmpty {
      var actions = JSONObject()
      for id in actionTitles.keys.sorted() { actions[id] = .string(actionTitles[id]!) }
      object["actions"] = .object(actions)
    }
    return .object(object)
  }
}

extension TipAction {
  /// Decodes `{id, title}`; the id is required and non-empty.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["id", "title"], path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    let title = try D.string(try D.required(object, "title", path), D.join(path, "title"))
    self.init(id: id, title: title)
  }

  public var json: JSONValue { ["id": .string(id), "title": .string(title)] }
}

extension TipOptions {
  /// Decodes `{maxDisplayCount?: int >= 1, maxDisplayDuration?: number > 0, ignoresDisplayFrequency?: bool}`.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["maxDisplayCount", "maxDisplayDuration", "ignoresDisplayFrequency"], path)
    self.init()
    if let value = D.optional(object, "maxDisplayCount") {
      guard let count = value.intValue, count >= 1, let exact = Int(exactly: count) else {
        throw D.fail(D.join(path, "maxDisplayCount"), "expected an integer of at least 1")
      }
      maxDisplayCount = exact
    }
    if let value = D.optional(object, "maxDisplayDuration") {
      guard let seconds = value.doubleValue, seconds.isFinite, seconds > 0 else {
        throw D.fail(D.join(path, "maxDisplayDuration"), "expected a positive number of seconds")
      }
      maxDisplayDuration = seconds
    }
    if let value = D.optional(object, "ignoresDisplayFrequency") {
      guard case .bool(let flag) = value else {
        throw D.fail(D.join(path, "ignoresDisplayFrequency"), "expected a boolean, got \(value.typeName)")
      }
      ignoresDisplayFrequency = flag
    }
  }

  /// Only the options that are set (`ignoresDisplayFrequency` only when true).
  public var json: JSONValue {
    var object = JSONObject()
    if let maxDisplayCount { object["maxDisplayCount"] = .int(Int64(maxDisplayCount)) }
    if let maxDisplayDuration { object["maxDisplayDuration"] = JSONDecoding.number(maxDisplayDuration) }
    if ignoresDisplayFrequency { object["ignoresDisplayFrequency"] = .bool(true) }
    return .object(object)
  }
}

// MARK: - Parameters and groups

extension ParameterDefinition {
  /// Decodes `{id, default, transient?}`; the default must be a Bool, Int, Double or String.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["id", "default", "transient"], path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    let value = try D.required(object, "default", path)
    guard D.isScalar(value) else {
      throw D.fail(D.join(path, "default"), "expected a boolean, number or string, got \(value.typeName)")
    }
    var transient = false
    if let flag = D.optional(object, "transient") {
      guard case .bool(let b) = flag else {
        throw D.fail(D.join(path, "transient"), "expected a boolean, got \(flag.typeName)")
      }
      transient = b
    }
    self.init(id: id, defaultValue: value, transient: transient)
  }

  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "default": defaultValue]
    if transient { object["transient"] = .bool(true) }
    return .object(object)
  }
}

extension TipGroupDefinition {
  /// Decodes `{id, priority: "ordered"|"firstAvailable", tips: [ids]}`.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["id", "priority", "tips"], path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    let priorityPath = D.join(path, "priority")
    let name = try D.string(try D.required(object, "priority", path), priorityPath)
    guard let priority = GroupPriority(rawValue: name) else {
      throw D.fail(priorityPath, "unknown priority \"\(name)\" (expected \"ordered\" or \"firstAvailable\")")
    }
    let tipsPath = D.join(path, "tips")
    var tipIDs: [String] = []
    for (index, element) in try D.array(try D.required(object, "tips", path), tipsPath).enumerated() {
      tipIDs.append(try D.nonEmptyString(element, "\(tipsPath)[\(index)]"))
    }
    self.init(id: id, priority: priority, tipIDs: tipIDs)
  }

  public var json: JSONValue {
    ["id": .string(id), "priority": .string(priority.rawValue), "tips": .array(tipIDs.map { .string($0) })]
  }
}

// MARK: - Status

extension TipStatus {
  /// `pending`, `available` or `invalidated`.
  public var name: String {
    switch self {
    case .pending: "pending"
    case .available: "available"
    case .invalidated: "invalidated"
    }
  }

  /// The invalidation reason, when invalidated.
  public var reason: InvalidationReason? {
    if case .invalidated(let reason) = self { return reason }
    return nil
  }

  var isInvalidated: Bool { reason != nil }
}

extension TipState {
  /// `{"id", "status", "reason"?, "shouldDisplay"}`.
  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "status": .string(status.name)]
    if let reason = status.reason { object["reason"] = .string(reason.rawValue) }
    object["shouldDisplay"] = .bool(shouldDisplay)
    return .object(object)
  }
}
