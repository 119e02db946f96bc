extension JSONValue: ExpressibleByNilLiteral {
  /// Creates `.null`.
  public init(nilLiteral: ()) {
    self = .null
  }
}

extension JSONValue: ExpressibleByBooleanLiteral {
  /// Creates `.bool`.
  public init(booleanLiteral value: Bool) {
    self = .bool(value)
  }
}

extension JSONValue: ExpressibleByIntegerLiteral {
  /// Creates `.int`.
  public init(integerLiteral value: Int64) {
    self = .int(value)
  }
}

extension JSONValue: ExpressibleByFloatLiteral {
  /// Creates `.double`.
  public init(floatLiteral value: Double) {
    self = .double(value)
  }
}

extension JSONValue: ExpressibleByStringLiteral {
  /// Creates `.string`.
  public init(stringLiteral value: String) {
    self = .string(value)
  }
}

extension JSONValue: ExpressibleByArrayLiteral {
  /// Creates `.array`.
  public init(arrayLiteral elements: JSONValue...) {
    self = .array(elements)
  }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
  /// Creates `.object`, keeping the literal's order; a repeated key keeps
  /// its first position and its last value.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    var object = JSONObject()
    for (key, value) in elements { object[key] = value }
    self = .object(object)
  }
}
