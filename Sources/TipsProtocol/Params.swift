public import TipsEngine
public import TipsJSON

/// Typed access to a request's params for method handlers, producing
/// precise -32602 errors that name the method and the offending path:
///
/// - `events/donate: missing required param "id"`
/// - `events/donate: params.id must be a string (got number)`
/// - `tips/register: params.rule.kind must be a string (got null)`
///
/// Optional accessors return `nil` for an absent member or an explicit
/// `null`; a present member of the wrong type is still an error.
public struct Params: Sendable {
  /// The method, used as the message prefix.
  public let method: String
  /// The (named) params.
  public let object: JSONObject
  /// The dotted path of this object below `params` ("" at the root).
  public let path: String

  /// Wraps a request's `params`.
  ///
  /// Absent or `null` params are an empty object. An array is accepted only
  /// when `positional` names its elements, and is then treated as the
  /// object `{positional[0]: params[0], …}`; more elements than names is an
  /// error. Any other type is an error.
  public init(_ value: JSONValue?, method: String, positional: [String] = []) throws(ResponseError) {
    self.method = method
    self.path = ""
    switch value {
    case nil, .null?:
      object = JSONObject()
    case .object(let object)?:
      self.object = object
    case .array(let elements)? where !positional.isEmpty:
      guard elements.count <= positional.count else {
        throw .invalidParams(
          "\(method): expected at most \(positional.count) positional params (got \(elements.count))")
      }
      var object = JSONObject()
      for (name, element) in zip(positional, elements) { object[name] = element }
      self.object = object
    case .array?:
      throw .invalidParams("\(method): params must be an object, not an array")
    case let other?:
      throw .invalidParams("\(method): params must be an object (got \(other.typeName))")
    }
  }

  /// A nested object's view, for error paths like `params.rule.kind`.
  private init(nested object: JSONObject, method: String, path: String) {
    self.method = method
    self.object = object
    self.path = path
  }

  // MARK: Errors

  /// `key` as a path below `params` (`rule.kind`).
  private func relativePath(_ key: String) -> String {
    path.isEmpty ? key : "\(path).\(key)"
  }

  /// `method: missing required param "path"`.
  public func missing(_ key: String) -> ResponseError {
    .invalidParams("\(method): missing required param \"\(relativePath(key))\"")
  }

  /// `method: params.path must be <expected> (got <type>)`.
  public func mismatch(_ key: String, expected: String, got value: JSONValue) -> ResponseError {
    mismatch(key, expected: expected, got: value.typeName)
  }

  /// `method: params.path must be <expected> (got <description>)`.
  private func mismatch(_ key: String, expected: String, got description: String) -> ResponseError {
    .invalidParams("\(method): params.\(relativePath(key)) must be \(expected) (got \(description))")
  }

  /// `method: params.path <problem>`, for handler-side validation such as
  /// `invalid(key, "must be positive")`.
  public func invalid(_ key: String, _ problem: String) -> ResponseError {
    .invalidParams("\(method): params.\(relativePath(key)) \(problem)")
  }

  // MARK: Presence

  /// Whether `key` is present (even as `null`).
  public func contains(_ key: String) -> Bool {
    object.contains(key: key)
  }

  /// The member, absent or `null` → `nil`.
  private func present(_ key: String) -> JSONValue? {
    switch object[key] {
    case nil, .null?: return nil
    case let value?: return value
    }
  }

  /// A required member's value of any type (including `null`).
  public func value(_ key: String) throws(ResponseError) -> JSONValue {
    guard let value = object[key] else { throw missing(key) }
    return value
  }

  /// A member's value of any type, `nil` when absent.
  public func optionalValue(_ key: String) -> JSONValue? {
    object[key]
  }

  // MARK: Typed accessors

  /// A required string.
  public func string(_ key: String) throws(ResponseError) -> String {
    guard let value = object[key] else { throw missing(key) }
    return try string(value, key)
  }

  /// An optional string.
  public func optionalString(_ key: String) throws(ResponseError) -> String? {
    guard let value = present(key) else { return nil }
    return try string(value, key)
  }

  private func string(_ value: JSONValue, _ key: String) throws(ResponseError) -> String {
    guard case .string(let s) = value else { throw mismatch(key, expected: "a string", got: value) }
    return s
  }

  /// A required integer (an integral number that fits `Int`).
  public func int(_ key: String) throws(ResponseError) -> Int {
    guard let value = object[key] else { throw missing(key) }
    return try int(value, key)
  }

  /// An optional integer.
  public func optionalInt(_ key: String) throws(ResponseError) -> Int? {
    guard let value = present(key) else { return nil }
    return try int(value, key)
  }

  private func int(_ value: JSONValue, _ key: String) throws(ResponseError) -> Int {
    guard let i = value.intValue, let int = Int(exactly: i) else {
      if case .double(let d) = value {
        let got = d.rounded() == d ? "number out of range" : "fractional number"
        throw mismatch(key, expected: "an integer", got: got)
      }
      throw mismatch(key, expected: "an integer", got: value)
    }
    return int
  }

  /// A required number.
  public func double(_ key: String) throws(ResponseError) -> Double {
    guard let value = object[key] else { throw missing(key) }
    return try double(value, key)
  }

  /// An optional number.
  public func optionalDouble(_ key: String) throws(ResponseError) -> Double? {
    guard let value = present(key) else { return nil }
    return try double(value, key)
  }

  private func double(_ value: JSONValue, _ key: String) throws(ResponseError) -> Double {
    guard let d = value.doubleValue else { throw mismatch(key, expected: "a number", got: value) }
    return d
  }

  /// A required boolean.
  public func bool(_ key: String) throws(ResponseError) -> Bool {
    guard let value = object[key] else { throw missing(key) }
    return try bool(value, key)
  }

  /// An optional boolean.
  public func optionalBool(_ key: String) throws(ResponseError) -> Bool? {
    guard let value = present(key) else { return nil }
    return try bool(value, key)
  }

  private func bool(_ value: JSONValue, _ key: String) throws(ResponseError) -> Bool {
    guard case .bool(let b) = value else { throw mismatch(key, expected: "a boolean", got: value) }
    return b
  }

  /// A required array.
  public func array(_ key: String) throws(ResponseError) -> [JSONValue] {
    guard let value = object[key] else { throw missing(key) }
    return try array(value, key)
  }

  /// An optional array.
  public func optionalArray(_ key: String) throws(ResponseError) -> [JSONValue]? {
    guard let value = present(key) else { return nil }
    return try array(value, key)
  }

  private func array(_ value: JSONValue, _ key: String) throws(ResponseError) -> [JSONValue] {
    guard case .array(let a) = value else { throw mismatch(key, expected: "an array", got: value) }
    return a
  }

  /// A required array of strings; errors name the element
  /// (`params.ids[2] must be a string (got number)`).
  public func stringArray(_ key: String) throws(ResponseError) -> [String] {
    guard let value = object[key] else { throw missing(key) }
    return try stringArray(value, key)
  }

  /// An optional array of strings.
  public func optionalStringArray(_ key: String) throws(ResponseError) -> [String]? {
    guard let value = present(key) else { return nil }
    return try stringArray(value, key)
  }

  private func stringArray(_ value: JSONValue, _ key: String) throws(ResponseError) -> [String] {
    let elements = try array(value, key)
    var strings: [String] = []
    strings.reserveCapacity(elements.count)
    for (i, element) in elements.enumerated() {
      guard case .string(let s) = element else {
        throw mismatch("\(key)[\(i)]", expected: "a string", got: element)
      }
      strings.append(s)
    }
    return strings
  }

  /// A required object.
  public func object(_ key: String) throws(ResponseError) -> JSONObject {
    guard let value = object[key] else { throw missing(key) }
    return try object(value, key)
  }

  /// An optional object.
  public func optionalObject(_ key: String) throws(ResponseError) -> JSONObject? {
    guard let value = present(key) else { return nil }
    return try object(value, key)
  }

  private func object(_ value: JSONValue, _ key: String) throws(ResponseError) -> JSONObject {
    guard case .object(let o) = value else { throw mismatch(key, expected: "an object", got: value) }
    return o
  }

  /// A required nested object as `Params`, so its errors carry the full
  /// path (`params.rule.kind`).
  public func nested(_ key: String) throws(ResponseError) -> Params {
    Params(nested: try object(key), method: method, path: relativePath(key))
  }

  /// An optional nested object as `Params`.
  public func optionalNested(_ key: String) throws(ResponseError) -> Params? {
    guard let object = try optionalObject(key) else { return nil }
    return Params(nested: object, method: method, path: relativePath(key))
  }

  /// Element `index` of the array `key`, which must be an object, as `Params` (errors name `params.key[index].…`).
  public func element(_ key: String, _ index: Int, of value: JSONValue) throws(ResponseError) -> Params {
    guard case .object(let object) = value else {
      throw mismatch("\(key)[\(index)]", expected: "an object", got: value)
    }
    return Params(nested: object, method: method, path: relativePath("\(key)[\(index)]"))
  }
}

// MARK: - Engine values

extension Params {
  /// A required string naming one case of `E`: `method: params.key must be one of a, b, c (got "x")`.
  public func enumeration<E: RawRepresentable & CaseIterable>(_ key: String, _ type: E.Type) throws(ResponseError) -> E
  where E.RawValue == String {
    try enumeration(key, try string(key))
  }

  /// An optional string naming one case of `E`.
  public func optionalEnumeration<E: RawRepresentable & CaseIterable>(_ key: String, _ type: E.Type)
    throws(ResponseError) -> E? where E.RawValue == String
  {
    guard let name = try optionalString(key) else { return nil }
    return try enumeration(key, name)
  }

  private func enumeration<E: RawRepresentable & CaseIterable>(_ key: String, _ name: String) throws(ResponseError) -> E
  where E.RawValue == String {
    if let value = E(rawValue: name) { return value }
    let names = E.allCases.map(\.rawValue)
    let expected =
      names.count == 2
      ? "must be \"\(names[0])\" or \"\(names[1])\"" : "must be one of " + names.joined(separator: ", ")
    throw invalid(key, "\(expected) (got \"\(name)\")")
  }

  /// Runs an engine decoding (a tip, rule or parameter definition), mapping its error to -32602 with the path.
  public func decoding<T>(_ body: () throws(EngineError) -> T) throws(ResponseError) -> T {
    do {
      return try body()
    } catch {
      throw ResponseError(error, method: method)
    }
  }
}

extension ResponseError {
  /// The protocol error for an engine error, naming the method and, for an argument, its param path.
  public init(_ error: EngineError, method: String) {
    switch error {
    case .unknownTip(let id): self = .unknownTip(id)
    case .unknownGroup(let id): self = .unknownGroup(id)
    case .unknownParameter(let id): self = .unknownParameter(method: method, id: id)
    case .invalidDefinition(let path, let problem):
      self = .invalidDefinition(method: method, path: path, problem: problem)
    case .invalidArgument(let argument, let problem): self = .invalidParams("\(method): params.\(argument) \(problem)")
    case .parameterTypeMismatch: self = .invalidParams("\(method): \(error)")
    }
  }
}
