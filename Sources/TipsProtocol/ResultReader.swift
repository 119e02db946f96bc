public import TipsJSON

/// A result that does not have the shape its method's `Response` reads, naming where: `result.tips[0].id must be a
/// string (got number)`.
public struct ResultDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

/// A result read back into its typed `Response` (the client side of ``ResultValue``).
public protocol DecodableResult {
  /// Reads the members from a result object; errors name the member's path.
  init(from reader: ResultReader) throws(ResultDecodingError)
}

extension ResultValue where Self: DecodableResult {
  public init(json: JSONValue) throws(ResultDecodingError) {
    try self.init(from: ResultReader(json))
  }
}

/// Typed reads of a result object for a `Response`'s decoding — the mirror of ``Params`` for what the daemon sends
/// back. Optional reads return `nil` for an absent member or `null`; a present member of another type is an error.
public struct ResultReader: Sendable {
  /// The object's members.
  public let object: JSONObject
  /// Where the object is (`result`, `result.tips[0]`), for errors.
  public let path: String

  /// Reads `value`, which must be an object.
  public init(_ value: JSONValue, path: String = "result") throws(ResultDecodingError) {
    guard case .object(let object) = value else {
      throw ResultDecodingError("\(path) must be an object (got \(value.typeName))")
    }
    self.object = object
    self.path = path
  }

  private func at(_ key: String) -> String { "\(path).\(key)" }

  private func mismatch(_ key: String, _ expected: String, _ value: JSONValue) -> ResultDecodingError {
    ResultDecodingError("\(at(key)) must be \(expected) (got \(value.typeName))")
  }

  /// `path.key problem`, for a check of the caller's own.
  public func invalid(_ key: String, _ problem: String) -> ResultDecodingError {
    ResultDecodingError("\(at(key)) \(problem)")
  }

  /// A member that must be present (it may be `null`).
  public func value(_ key: String) throws(ResultDecodingError) -> JSONValue {
    guard let value = object[key] else { throw ResultDecodingError("\(path) has no member \"\(key)\"") }
    return value
  }

  /// A member, `nil` when absent or `null`.
  public func optionalValue(_ key: String) -> JSONValue? {
    switch object[key] {
    case nil, .null?: nil
    case let value?: value
    }
  }

  private func typed<T>(_ key: String, _ expected: String, _ read: (JSONValue) -> T?) throws(ResultDecodingError) -> T {
    let value = try value(key)
    guard let typed = read(value) else { throw mismatch(key, expected, value) }
    return typed
  }

  private func optionalTyped<T>(_ key: String, _ expected: String, _ read: (JSONValue) -> T?)
    throws(ResultDecodingError) -> T?
  {
    guard let value = optionalValue(key) else { return nil }
    guard let typed = read(value) else { throw mismatch(key, expected, value) }
    return typed
  }

  private static func string(_ value: JSONValue) -> String? {
    if case .string(let text) = value { text } else { nil }
  }
  private static func bool(_ value: JSONValue) -> Bool? {
    if case .bool(let flag) = value { flag } else { nil }
  }
  private static func int(_ value: JSONValue) -> Int? { value.intValue.flatMap { Int(exactly: $0) } }

  public func string(_ key: String) throws(ResultDecodingError) -> String { try typed(key, "a string", Self.string) }
  public func optionalString(_ key: String) throws(ResultDecodingError) -> String? {
    try optionalTyped(key, "a string", Self.string)
  }
  public func bool(_ key: String) throws(ResultDecodingError) -> Bool { try typed(key, "a boolean", Self.bool) }
  public func optionalBool(_ key: String) throws(ResultDecodingError) -> Bool? {
    try optionalTyped(key, "a boolean", Self.bool)
  }
  public func int(_ key: String) throws(ResultDecodingError) -> Int { try typed(key, "an integer", Self.int) }
  public func optionalInt(_ key: String) throws(ResultDecodingError) -> Int? {
    try optionalTyped(key, "an integer", Self.int)
  }
  public func int64(_ key: String) throws(ResultDecodingError) -> Int64 { try typed(key, "an integer", \.intValue) }
  public func optionalInt64(_ key: String) throws(ResultDecodingError) -> Int64? {
    try optionalTyped(key, "an integer", \.intValue)
  }
  public func double(_ key: String) throws(ResultDecodingError) -> Double { try typed(key, "a number", \.doubleValue) }
  public func optionalDouble(_ key: String) throws(ResultDecodingError) -> Double? {
    try optionalTyped(key, "a number", \.doubleValue)
  }

  /// An array (of anything).
  public func array(_ key: String) throws(ResultDecodingError) -> [JSONValue] {
    try typed(key, "an array", \.arrayValue)
  }

  /// An array of strings.
  public func strings(_ key: String) throws(ResultDecodingError) -> [String] {
    let elements = try array(key)
    var strings: [String] = []
    for (index, element) in elements.enumerated() {
      guard let text = Self.string(element) else { throw mismatch("\(key)[\(index)]", "a string", element) }
      strings.append(text)
    }
    return strings
  }

  /// A string naming one case of `E`.
  public func enumeration<E: RawRepresentable>(_ key: String, _ type: E.Type) throws(ResultDecodingError) -> E
  where E.RawValue == String {
    let name = try string(key)
    guard let value = E(rawValue: name) else { throw invalid(key, "is not a known value (got \"\(name)\")") }
    return value
  }

  /// A nested object.
  public func nested(_ key: String) throws(ResultDecodingError) -> ResultReader {
    try ResultReader(try value(key), path: at(key))
  }

  /// A nested object, `nil` when absent or `null`.
  public func optionalNested(_ key: String) throws(ResultDecodingError) -> ResultReader? {
    guard let value = optionalValue(key) else { return nil }
    return try ResultReader(value, path: at(key))
  }

  /// A nested object decoded as `T`.
  public func decode<T: DecodableResult>(_ key: String, as type: T.Type) throws(ResultDecodingError) -> T {
    try T(from: try nested(key))
  }

  /// A nested object decoded as `T`, `nil` when absent or `null`.
  public func decodeIfPresent<T: DecodableResult>(_ key: String, as type: T.Type) throws(ResultDecodingError) -> T? {
    guard let reader = try optionalNested(key) else { return nil }
    return try T(from: reader)
  }

  /// An array of objects, each decoded as `T`.
  public func decodeArray<T: DecodableResult>(_ key: String, of type: T.Type) throws(ResultDecodingError) -> [T] {
    var decoded: [T] = []
    for (index, element) in try array(key).enumerated() {
      decoded.append(try T(from: try ResultReader(element, path: "\(at(key))[\(index)]")))
    }
    return decoded
  }
}
