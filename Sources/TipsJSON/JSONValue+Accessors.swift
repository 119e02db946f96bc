extension JSONValue {
  /// The member named `key` when this is an object, otherwise `nil`.
  public subscript(key: String) -> JSONValue? {
    guard case .object(let object) = self else { return nil }
    return object[key]
  }

  /// The element at `index` when this is an array and the index is in
  /// range, otherwise `nil`.
  public subscript(index: Int) -> JSONValue? {
    guard case .array(let array) = self, array.indices.contains(index) else { return nil }
    return array[index]
  }

  /// The string payload, or `nil` for non-strings.
  public var stringValue: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  /// The boolean payload, or `nil` for non-booleans.
  public var boolValue: Bool? {
    if case .bool(let b) = self { return b }
    return nil
  }

  /// The integer value of an `.int`, or of a `.double` holding an exactly
  /// representable integral value; otherwise `nil`.
  public var intValue: Int64? {
    switch self {
    case .int(let i): return i
    case .double(let d): return Int64(exactly: d)
    default: return nil
    }
  }

  /// The numeric value of an `.int` or `.double`, otherwise `nil`.
  public var doubleValue: Double? {
    switch self {
    case .int(let i): return Double(i)
    case .double(let d): return d
    default: return nil
    }
  }

  /// The elements of an array, otherwise `nil`.
  public var arrayValue: [JSONValue]? {
    if case .array(let a) = self { return a }
    return nil
  }

  /// The object payload, otherwise `nil`.
  public var objectValue: JSONObject? {
    if case .object(let o) = self { return o }
    return nil
  }

  /// Whether this is the JSON literal `null`.
  public var isNull: Bool {
    if case .null = self { return true }
    return false
  }

  /// Whether this is an `.int` or a `.double`.
  public var isNumber: Bool {
    switch self {
    case .int, .double: return true
    default: return false
    }
  }

  /// The JSON type name of the value (`null`, `boolean`, `number`,
  /// `string`, `array` or `object`), for error messages.
  public var typeName: String {
    switch self {
    case .null: return "null"
    case .bool: return "boolean"
    case .int, .double: return "number"
    case .string: return "string"
    case .array: return "array"
    case .object: return "object"
    }
  }
}

extension JSONValue {
  /// A number as JSON: `.int` when it is an exact integer, else `.double`.
  public static func number(_ value: Double) -> JSONValue {
    if let exact = Int64(exactly: value) { return .int(exact) }
    return .double(value)
  }
}
