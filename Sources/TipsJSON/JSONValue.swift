/// A JSON value as defined by RFC 8259.
///
/// Numbers written without a fraction or exponent that fit in `Int64` are
/// represented as `.int`; every other number is a `.double`. Equality is
/// numeric across the two number cases, so `.int(3) == .double(3.0)`, and
/// hashing is consistent with that equality.
public enum JSONValue: Sendable {
  /// The JSON literal `null`.
  case null
  /// The JSON literals `true` and `false`.
  case bool(Bool)
  /// An integral number that fits in `Int64`.
  case int(Int64)
  /// Any other (finite) number.
  case double(Double)
  /// A string.
  case string(String)
  /// An ordered list of values.
  case array([JSONValue])
  /// An insertion-ordered object.
  case object(JSONObject)
}

extension JSONValue: Hashable {
  /// Compares two values; numbers compare by mathematical value, objects
  /// ignore member order.
  public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null):
      return true
    case let (.bool(a), .bool(b)):
      return a == b
    case let (.int(a), .int(b)):
      return a == b
    case let (.double(a), .double(b)):
      return a == b
    case let (.int(a), .double(b)), let (.double(b), .int(a)):
      return Int64(exactly: b) == a
    case let (.string(a), .string(b)):
      return a == b
    case let (.array(a), .array(b)):
      return a == b
    case let (.object(a), .object(b)):
      return a == b
    default:
      return false
    }
  }

  /// Hashes the value consistently with `==`: a double with an exact
  /// `Int64` value hashes like that integer.
  public func hash(into hasher: inout Hasher) {
    switch self {
    case .null:
      hasher.combine(0 as UInt8)
    case .bool(let b):
      hasher.combine(1 as UInt8)
      hasher.combine(b)
    case .int(let i):
      hasher.combine(2 as UInt8)
      hasher.combine(i)
    case .double(let d):
      if let i = Int64(exactly: d) {
        hasher.combine(2 as UInt8)
        hasher.combine(i)
      } else {
        hasher.combine(3 as UInt8)
        hasher.combine(d)
      }
    case .string(let s):
      hasher.combine(4 as UInt8)
      hasher.combine(s)
    case .array(let a):
      hasher.combine(5 as UInt8)
      hasher.combine(a)
    case .object(let o):
      hasher.combine(6 as UInt8)
      hasher.combine(o)
    }
  }
}

extension JSONValue: CustomStringConvertible {
  /// The compact JSON text of the value.
  public var description: String { jsonString }
}
