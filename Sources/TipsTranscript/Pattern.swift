public import TipsJSON

/// Matches messages against transcript patterns: JSON that must equal the message, except for these strings —
/// `"$any"`, `"$string"`, `"$number"`, `"$integer"`, `"$boolean"`, `"$object"`, `"$array"` (any value of that type),
/// `"$regex:RE"` (a string RE matches entirely), `"$capture:NAME"` (any value, remembered; a second capture of the
/// same name must be equal), `"$$text"` (the literal `$text`) — and `["$unordered", P1, P2, …]` (an array matching
/// in any order) and `{"key?": P}` (an optional member). With `partial`, an object pattern compares only the
/// members it writes.
public struct PatternMatcher: Sendable {
  public var partial: Bool

  public init(partial: Bool = false) { self.partial = partial }

  /// nil when `value` matches (captures bound into `bindings`), else where and how it differs.
  public func match(_ pattern: JSONValue, _ value: JSONValue, _ bindings: inout [String: JSONValue], path: String = "")
    -> String?
  {
    let here = path.isEmpty ? "/" : path
    switch pattern {
    case .string(let text) where text.hasPrefix("$"):
      if text.hasPrefix("$$") {
        return value == .string(String(text.dropFirst()))
          ? nil : "\(here): expected \(String(text.dropFirst()).quoted), got \(value.jsonString)"
      }
      if text.hasPrefix("$capture:") {
        let name = String(text.dropFirst("$capture:".count))
        if let bound = bindings[name], !Self.equal(bound, value) {
          return "\(here): $\(name) was \(bound.jsonString), got \(value.jsonString)"
        }
        bindings[name] = value
        return nil
      }
      if text.hasPrefix("$regex:") {
        let expression = String(text.dropFirst("$regex:".count))
        guard case .string(let string) = value, let regex = try? Regex(expression),
          (try? regex.wholeMatch(in: string)) != nil
        else {
          return "\(here): expected \(text), got \(value.jsonString)"
        }
        return nil
      }
      let ok: Bool
      switch text {
      case "$any": ok = true
      case "$string": if case .string = value { ok = true } else { ok = false }
      case "$number": ok = value.isNumber
      case "$integer":
        switch value {
        case .int: ok = true
        case .double(let d): ok = d.rounded() == d
        default: ok = false
        }
      case "$boolean": if case .bool = value { ok = true } else { ok = false }
      case "$object": if case .object = value { ok = true } else { ok = false }
      case "$array": if case .array = value { ok = true } else { ok = false }
      default: return "\(here): unknown pattern \(text.quoted) (write $$ for a literal $)"
      }
      return ok ? nil : "\(here): expected \(text), got \(value.jsonString)"
    case .object(let members):
      guard case .object(let actual) = value else { return "\(here): expected an object, got \(value.jsonString)" }
      var keys: [String: (key: String, optional: Bool)] = [:]
      for key in members.keys {
        let optional = key.hasSuffix("?")
        keys[optional ? String(key.dropLast()) : key] = (key, optional)
      }
      if !partial {
        for (key, member) in actual where keys[key] == nil {
          return "\(path)/\(key): unexpected member (value \(member.jsonString))"
        }
      }
      for key in members.keys {
        let optional = key.hasSuffix("?")
        let plain = optional ? String(key.dropLast()) : key
        guard let member = actual[plain] else {
          if optional { continue }
          return "\(path)/\(plain): missing"
        }
        if let problem = match(members[key]!, member, &bindings, path: "\(path)/\(plain)") { return problem }
      }
      return nil
    case .array(let items):
      guard case .array(let actual) = value else { return "\(here): expected an array, got \(value.jsonString)" }
      if items.first == .string("$unordered") {
        let rest = Array(items.dropFirst())
        guard rest.count == actual.count else {
          return "\(here): expected \(rest.count) elements in any order, got \(actual.count): \(value.jsonString)"
        }
        return matchUnordered(rest, actual, &bindings, path: path) == nil
          ? "\(here): no ordering of \(value.jsonString) matches" : nil
      }
      guard items.count == actual.count else {
        return "\(here): expected \(items.count) elements, got \(actual.count): \(value.jsonString)"
      }
      for (index, item) in items.enumerated() {
        if let problem = match(item, actual[index], &bindings, path: "\(path)/\(index)") { return problem }
      }
      return nil
    default:
      return Self.equal(pattern, value) ? nil : "\(here): expected \(pattern.jsonString), got \(value.jsonString)"
    }
  }

  /// An assignment of `values` to `patterns` in any order (binding captures), as indices into `values`; nil if none.
  public func matchUnordered(
    _ patterns: [JSONValue], _ values: [JSONValue], _ bindings: inout [String: JSONValue], path: String = ""
  ) -> [Int]? {
    var used = [Bool](repeating: false, count: values.count)
    var order: [Int] = []
    func search(_ index: Int, _ bound: [String: JSONValue]) -> [String: JSONValue]? {
      if index == patterns.count { return bound }
      for candidate in values.indices where !used[candidate] {
        var trial = bound
        guard match(patterns[index], values[candidate], &trial, path: path) == nil else { continue }
        used[candidate] = true
        order.append(candidate)
        if let done = search(index + 1, trial) { return done }
        used[candidate] = false
        order.removeLast()
      }
      return nil
    }
    guard let bound = search(0, bindings) else { return nil }
    bindings = bound
    return order
  }

  /// JSON equality where `1` equals `1.0` and `true` is not `1`.
  static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
    case (.array(let x), .array(let y)):
      return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
    case (.object(let x), .object(let y)):
      guard x.count == y.count else { return false }
      for (key, value) in x {
        guard let other = y[key], equal(value, other) else { return false }
      }
      return true
    default: return a == b
    }
  }
}

extension String {
  var quoted: String { JSONValue.string(self).jsonString }
}
