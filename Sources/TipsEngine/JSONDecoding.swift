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
  static func number(_ value: Double) -> JSONValue { JSONValue.number(value) }
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
