import TipsJSON

/// A rule explained in words, for hover: "Holds when `search.opened` was donated at least 3 times within the last
/// 1 day." Reads the rule as written (a rule still being typed gets as many words as it has parts).
enum RuleWords {
  /// The whole explanation (Markdown).
  static func sentence(_ rule: JSONValue) -> String {
    guard case .object(let object) = rule else { return "Not a rule: a rule is a JSON object." }
    if let inner = object["not"], object.count == 1 {
      return finish("Holds unless " + clause(inner, depth: 0))
    }
    guard kind(object) != nil else {
      return "An incomplete rule: it needs one of `event`, `parameter`, `tip`, `allOf`, `anyOf` or `not`."
    }
    return finish("Holds when " + clause(rule, depth: 0))
  }

  static func finish(_ text: String) -> String {
    text.hasSuffix(":") || text.contains("\n") ? text : text + "."
  }

  static func kind(_ object: JSONObject) -> String? {
    ["event", "parameter", "tip", "allOf", "anyOf", "not"].first { object[$0] != nil }
  }

  /// The condition a rule states, without "Holds when".
  static func clause(_ rule: JSONValue, depth: Int) -> String {
    guard case .object(let object) = rule, let kind = kind(object) else { return "(an incomplete rule)" }
    switch kind {
    case "event": return eventClause(object)
    case "parameter": return parameterClause(object)
    case "tip": return tipClause(object)
    case "not": return "not (" + clause(object["not"]!, depth: depth) + ")"
    default:
      let members = object[kind]?.arrayValue ?? []
      let head = kind == "allOf" ? "all of these hold" : "any of these holds"
      guard !members.isEmpty else {
        return kind == "allOf" ? "all of no rules hold (always)" : "any of no rules holds (never)"
      }
      let indent = String(repeating: "  ", count: depth)
      return head + ":" + members.map { "\n\(indent)- " + clause($0, depth: depth + 1) }.joined()
    }
  }

  static func code(_ text: String) -> String { "`\(text)`" }

  static func eventClause(_ object: JSONObject) -> String {
    let event = object["event"]?.stringValue.map(code) ?? "(an event)"
    var text: String
    if case .object(let count)? = object["count"], count.count == 1, let (name, value) = count.members.first,
      let n = value.intValue
    {
      let how = times(name, n)
      text = how == "never" ? "\(event) was never donated" : "\(event) was donated \(how)"
    } else {
      text = "\(event) was donated (no `count` yet: it needs one of eq, ne, lt, lte, gt, gte)"
    }
    if case .object(let matching)? = object["where"], !matching.isEmpty {
      text +=
        " with "
        + matching.members.map { "\(code($0.key)) = \(code($0.value.jsonString))" }.joined(separator: " and ")
    }
    if let key = object["largestGroupBy"]?.stringValue {
      text += " with the same \(code(key)) (its largest group by \(code(key)))"
    }
    if case .object(let within)? = object["within"], within.count == 1, let (unit, amount) = within.members.first,
      let length = amount.doubleValue
    {
      let number = amount.intValue.map(String.init) ?? String(length)
      let name = length == 1 && unit.hasSuffix("s") ? String(unit.dropLast()) : unit
      text += " within the last \(number) \(name)"
    }
    return text
  }

  /// A rule on another tip: "`welcome.tip` was invalidated at least 1 day ago", "`welcome.tip` was displayed at
  /// least twice".
  static func tipClause(_ object: JSONObject) -> String {
    let tip = object["tip"]?.stringValue.map(code) ?? "(a tip)"
    if case .object(let count)? = object["displayed"], count.count == 1, let (name, value) = count.members.first,
      let n = value.intValue
    {
      let how = times(name, n)
      return how == "never" ? "\(tip) was never displayed" : "\(tip) was displayed \(how)"
    }
    guard object["status"] != nil else {
      return "\(tip) (no condition yet: it needs \"status\": \"invalidated\" or \"displayed\": {op: n})"
    }
    var text = "\(tip) was invalidated"
    if case .object(let duration)? = object["for"], duration.count == 1, let (unit, amount) = duration.members.first,
      let length = amount.doubleValue
    {
      let number = amount.intValue.map(String.init) ?? String(length)
      let name = length == 1 && unit.hasSuffix("s") ? String(unit.dropLast()) : unit
      text += " at least \(number) \(name) ago"
    }
    return text + " (a tip that is not registered never counts)"
  }

  static func times(_ op: String, _ n: Int64) -> String {
    func count(_ n: Int64) -> String { n == 1 ? "once" : "\(n) times" }
    switch op {
    case "eq": return n == 0 ? "never" : "exactly \(count(n))"
    case "ne": return "any number of times but \(n)"
    case "lt": return n <= 0 ? "fewer than \(n) times (which never holds)" : n == 1 ? "never" : "fewer than \(n) times"
    case "lte": return n == 0 ? "never" : "at most \(count(n))"
    case "gt": return n == 0 ? "at least once" : "more than \(count(n))"
    case "gte": return n <= 0 ? "any number of times (gte \(n) always holds)" : "at least \(count(n))"
    default: return "(unknown operator \(code(op)))"
    }
  }

  static func parameterClause(_ object: JSONObject) -> String {
    let parameter = object["parameter"]?.stringValue.map(code) ?? "(a parameter)"
    let words = [
      "eq": "is", "ne": "is not", "lt": "is less than", "lte": "is at most", "gt": "is greater than",
      "gte": "is at least",
    ]
    guard let (op, value) = object.members.first(where: { words[$0.key] != nil }) else {
      return "parameter \(parameter) (no operator yet: eq, ne, lt, lte, gt or gte)"
    }
    return "parameter \(parameter) \(words[op]!) \(code(value.jsonString))"
  }
}
