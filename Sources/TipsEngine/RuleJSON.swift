public import TipsJSON

// Decoding and encoding of rules (`{"event": …}`, `{"parameter": …}`, `allOf`/`anyOf`/`not`).

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
  static let kinds = ["event", "parameter", "tip", "allOf", "anyOf", "not"]
  static let eventKeys = ["event", "count", "within", "where", "largestGroupBy"]
  static let tipKeys = ["tip", "status", "for", "displayed"]

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
      throw D.fail(
        path, "rule must have exactly one of \"event\", \"parameter\", \"tip\", \"allOf\", \"anyOf\", \"not\"")
    }
    switch present[0] {
    case "event":
      self = .event(try EventRule(json: object, path: path))
    case "tip":
      self = .tip(try TipRule(json: object, path: path))
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
    case .tip(let rule): rule.json
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

    let (op, countValue) = try Self.countComparison(
      try D.required(object, "count", path), D.join(path, "count"))

    var within: Double?
    if let value = object["within"] { within = try Self.duration(value, D.join(path, "within")) }

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

  /// Decodes `{op: n}`: exactly one comparison operator and a non-negative integer.
  static func countComparison(_ value: JSONValue, _ path: String) throws(EngineError) -> (ComparisonOperator, Int) {
    typealias D = JSONDecoding
    let count = try D.object(value, path)
    for (key, _) in count where ComparisonOperator(rawValue: key) == nil {
      throw D.fail(path, "unknown operator \"\(key)\"")
    }
    guard count.count == 1, let (key, value) = count.members.first, let op = ComparisonOperator(rawValue: key) else {
      throw D.fail(path, "expected exactly one operator (\(ComparisonOperator.names))")
    }
    guard let number = value.intValue, number >= 0, let countValue = Int(exactly: number) else {
      throw D.fail(D.join(path, key), "expected a non-negative integer, got \(D.describeNumber(value))")
    }
    return (op, countValue)
  }

  /// Decodes a duration object with exactly one unit (`{"hours": 24}`: `minutes`, `hours`, `days`, `weeks`) into
  /// seconds; the amount must be positive. `within`, a goal's window, a follow-on rule's `for` and an event's `maxAge`.
  public static func duration(_ value: JSONValue, _ path: String) throws(EngineError) -> Double {
    typealias D = JSONDecoding
    let units = try D.object(value, path)
    let unitNames = withinUnits.map(\.name)
    for (key, _) in units where !unitNames.contains(key) {
      throw D.fail(path, "unknown unit \"\(key)\"")
    }
    guard units.count == 1, let (unit, amount) = units.members.first,
      let seconds = withinUnits.first(where: { $0.name == unit })?.seconds
    else {
      throw D.fail(path, "expected exactly one of \"minutes\", \"hours\", \"days\", \"weeks\"")
    }
    guard let number = amount.doubleValue, number.isFinite, number > 0 else {
      throw D.fail(D.join(path, unit), "expected a positive number, got \(D.describeNumber(amount))")
    }
    return number * seconds
  }

  /// A duration in the largest unit that divides it exactly (minutes, possibly fractional, otherwise).
  public static func durationJSON(_ seconds: Double) -> JSONValue {
    for unit in withinUnits where (seconds / unit.seconds).rounded() == seconds / unit.seconds {
      return [unit.name: JSONDecoding.number(seconds / unit.seconds)]
    }
    return ["minutes": .double(seconds / 60)]
  }

  /// `within` in the largest unit that divides it exactly (minutes, possibly fractional, otherwise).
  var withinJSON: JSONValue? { within.map(Self.durationJSON) }

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

extension TipRule {
  /// Decodes `{"tip": id, "status": "invalidated", "for"?: duration}` or `{"tip": id, "displayed": {op: n}}`.
  init(json object: JSONObject, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    try D.checkKeys(object, Rule.tipKeys, path, what: " in a tip rule")
    let tipID = try D.nonEmptyString(object["tip"]!, D.join(path, "tip"))
    let hasStatus = object["status"] != nil
    let hasDisplayed = object["displayed"] != nil
    guard hasStatus != hasDisplayed else {
      throw D.fail(path, "a tip rule needs exactly one of \"status\" and \"displayed\"")
    }
    if hasStatus {
      let statusPath = D.join(path, "status")
      guard try D.string(object["status"]!, statusPath) == "invalidated" else {
        throw D.fail(statusPath, "expected \"invalidated\" (a tip rule follows a tip once it is done)")
      }
      var duration: Double?
      if let value = object["for"] { duration = try EventRule.duration(value, D.join(path, "for")) }
      self.init(tipID: tipID, condition: .invalidated(for: duration))
    } else {
      guard object["for"] == nil else {
        throw D.fail(D.join(path, "for"), "\"for\" goes with \"status\": \"invalidated\", not with \"displayed\"")
      }
      let displayedPath = D.join(path, "displayed")
      let (op, count) = try EventRule.countComparison(object["displayed"]!, displayedPath)
      self.init(tipID: tipID, condition: .displayed(op, count))
    }
  }

  public var json: JSONValue {
    var object: JSONObject = ["tip": .string(tipID)]
    switch condition {
    case .invalidated(let duration):
      object["status"] = "invalidated"
      if let duration { object["for"] = EventRule.durationJSON(duration) }
    case .displayed(let op, let count):
      object["displayed"] = [op.rawValue: .int(Int64(count))]
    }
    return .object(object)
  }
}
