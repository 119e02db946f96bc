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

// MARK: - Rules

extension ComparisonOperator {
  /// The operator as it reads in explanations: `==`, `!=`, `<`, `<=`, `>`, `>=`.
  public var symbol: String {
    switch self {
    case .eq: "=="
    case .ne: "!="
    case .lt: "<"
    case .lte: "<="
    case .gt: ">"
    case .gte: ">="
    }
  }

  static let names = ComparisonOperator.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
}

/// `within` units, largest first, with their length in seconds.
let withinUnits: [(name: String, seconds: Double)] = [
  ("weeks", 604_800), ("days", 86_400), ("hours", 3_600), ("minutes", 60),
]

extension Rule {
  static let kinds = ["event", "parameter", "allOf", "anyOf", "not"]
  static let eventKeys = ["event", "count", "within", "where", "largestGroupBy"]

  /// Decodes one rule (see ``Rule`` for the shapes). Every failure names the offending path, e.g.
  /// `tips[2].rules[1].count: unknown operator "gte "`.
  public init(json: JSONValue, path: String) throws(EngineError) {
    try self.init(json: json, path: path, depth: 1)
  }

  /// How deeply `allOf`/`anyOf`/`not` may nest; deeper rules are surely a mistake, and their explanations would
  /// nest past what JSON readers accept.
  public static let maximumDepth = 32

  init(json: JSONValue, path: String, depth: Int) throws(EngineError) {
    typealias D = JSONDecoding
    guard depth <= Self.maximumDepth else {
      throw D.fail(path, "rules nest more than \(Self.maximumDepth) levels deep")
    }
    let object = try D.object(json, path)
    let present = Self.kinds.filter { object[$0] != nil }
    guard present.count == 1 else {
      throw D.fail(path, "rule must have exactly one of \"event\", \"parameter\", \"allOf\", \"anyOf\", \"not\"")
    }
    switch present[0] {
    case "event":
      self = .event(try EventRule(json: object, path: path))
    case "parameter":
      self = .parameter(try ParameterRule(json: object, path: path))
    case "allOf", "anyOf":
      let key = present[0]
      try D.checkKeys(object, [key], path)
      let listPath = D.join(path, key)
      var rules: [Rule] = []
      for (index, element) in try D.array(object[key]!, listPath).enumerated() {
        rules.append(try Rule(json: element, path: "\(listPath)[\(index)]", depth: depth + 1))
      }
      self = key == "allOf" ? .allOf(rules) : .anyOf(rules)
    default:
      try D.checkKeys(object, ["not"], path)
      self = .not(try Rule(json: object["not"]!, path: D.join(path, "not"), depth: depth + 1))
    }
  }

  /// The rule as JSON, in the shape ``init(json:path:)`` reads.
  public var json: JSONValue {
    switch self {
    case .event(let rule): rule.json
    case .parameter(let rule): rule.json
    case .allOf(let rules): ["allOf": .array(rules.map(\.json))]
    case .anyOf(let rules): ["anyOf": .array(rules.map(\.json))]
    case .not(let rule): ["not": rule.json]
    }
  }
}

extension EventRule {
  /// Decodes the members of an event rule object (`event`, `count`, optional `within`, `where`, `largestGroupBy`).
  init(json object: JSONObject, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    try D.checkKeys(object, Rule.eventKeys, path, what: " in an event rule")
    let eventID = try D.nonEmptyString(object["event"]!, D.join(path, "event"))

    let countPath = D.join(path, "count")
    let count = try D.object(try D.required(object, "count", path), countPath)
    for (key, _) in count where ComparisonOperator(rawValue: key) == nil {
      throw D.fail(countPath, "unknown operator \"\(key)\"")
    }
    guard count.count == 1, let (key, value) = count.members.first, let op = ComparisonOperator(rawValue: key) else {
      throw D.fail(countPath, "expected exactly one operator (\(ComparisonOperator.names))")
    }
    guard let number = value.intValue, number >= 0, let countValue = Int(exactly: number) else {
      throw D.fail(D.join(countPath, key), "expected a non-negative integer, got \(D.describeNumber(value))")
    }

    var within: Double?
    if let value = object["within"] {
      let withinPath = D.join(path, "within")
      let units = try D.object(value, withinPath)
      let unitNames = withinUnits.map(\.name)
      for (key, _) in units where !unitNames.contains(key) {
        throw D.fail(withinPath, "unknown unit \"\(key)\"")
      }
      guard units.count == 1, let (unit, amount) = units.members.first,
        let seconds = withinUnits.first(where: { $0.name == unit })?.seconds
      else {
        throw D.fail(withinPath, "expected exactly one of \"minutes\", \"hours\", \"days\", \"weeks\"")
      }
      guard let number = amount.doubleValue, number.isFinite, number > 0 else {
        throw D.fail(D.join(withinPath, unit), "expected a positive number, got \(D.describeNumber(amount))")
      }
      within = number * seconds
    }

    var matching: JSONObject?
    if let value = object["where"] {
      matching = try D.object(value, D.join(path, "where"))
    }

    var largestGroupBy: String?
    if let value = object["largestGroupBy"] {
      largestGroupBy = try D.nonEmptyString(value, D.join(path, "largestGroupBy"))
    }
    self.init(
      eventID: eventID, within: within, matching: matching, largestGroupBy: largestGroupBy, countOperator: op,
      countValue: countValue)
  }

  /// `within` in the largest unit that divides it exactly (minutes, possibly fractional, otherwise).
  var withinJSON: JSONValue? {
    guard let within else { return nil }
    for unit in withinUnits where (within / unit.seconds).rounded() == within / unit.seconds {
      return [unit.name: JSONDecoding.number(within / unit.seconds)]
    }
    return ["minutes": .double(within / 60)]
  }

  public var json: JSONValue {
    var object: JSONObject = ["event": .string(eventID)]
    if let withinJSON { object["within"] = withinJSON }
    if let matching { object["where"] = .object(matching) }
    if let largestGroupBy { object["largestGroupBy"] = .string(largestGroupBy) }
    object["count"] = [countOperator.rawValue: .int(Int64(countValue))]
    return .object(object)
  }
}

extension ParameterRule {
  /// Decodes `{"parameter": id, <op>: value}` with exactly one operator and a Bool, Int, Double or String value.
  init(json object: JSONObject, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let parameterID = try D.nonEmptyString(object["parameter"]!, D.join(path, "parameter"))
    for (key, _) in object where key != "parameter" && ComparisonOperator(rawValue: key) == nil {
      throw D.fail(path, "unknown operator \"\(key)\"")
    }
    let operators = object.members.filter { $0.key != "parameter" }
    guard operators.count == 1, let op = ComparisonOperator(rawValue: operators[0].key) else {
      throw D.fail(path, "parameter rule must have exactly one operator (\(ComparisonOperator.names))")
    }
    let value = operators[0].value
    guard D.isScalar(value) else {
      throw D.fail(D.join(path, op.rawValue), "expected a boolean, number or string, got \(value.typeName)")
    }
    self.init(parameterID: parameterID, op: op, value: value)
  }

  public var json: JSONValue {
    ["parameter": .string(parameterID), op.rawValue: value]
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
