public import TipsJSON

/// A JSON-RPC request id. A reply to a message whose id is `null` or could
/// not be determined uses `RequestID?` with `nil` for `null`.
public enum RequestID: Hashable, Sendable {
  /// An integer id.
  case int(Int64)
  /// A string id.
  case string(String)

  /// The id as a JSON value.
  public var json: JSONValue {
    switch self {
    case .int(let i): return .int(i)
    case .string(let s): return .string(s)
    }
  }

  /// Decodes an id member: a string, or a number with an exact `Int64`
  /// value (so `1.0` is accepted as `1`). Fractional and out-of-range
  /// numbers, and every other type, give `nil`; a `null` id is handled by
  /// the caller.
  public init?(json: JSONValue) {
    switch json {
    case .string(let s):
      self = .string(s)
    case .int, .double:
      guard let i = json.intValue else { return nil }
      self = .int(i)
    default:
      return nil
    }
  }
}

extension RequestID: ExpressibleByIntegerLiteral {
  /// Creates `.int`.
  public init(integerLiteral value: Int64) {
    self = .int(value)
  }
}

extension RequestID: ExpressibleByStringLiteral {
  /// Creates `.string`.
  public init(stringLiteral value: String) {
    self = .string(value)
  }
}

extension RequestID: CustomStringConvertible {
  /// The id as JSON text (`7` or `"abc"`).
  public var description: String { json.jsonString }
}

extension Optional where Wrapped == RequestID {
  /// Writes the id, or `null` for `nil`.
  func write(to writer: inout JSONWriter) {
    switch self {
    case .int(let i)?: writer.writeInt(i)
    case .string(let s)?: writer.writeString(s)
    case nil: writer.writeNull()
    }
  }
}
