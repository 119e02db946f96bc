/// A strict RFC 8259 JSON parser working directly on UTF-8 bytes.
///
/// The parser is iterative (it keeps its own stack of open containers), so
/// deeply nested input can never overflow the call stack; nesting beyond
/// `maxDepth` is rejected with `JSONParseError.Kind.nestingTooDeep`.
///
/// Strictness: exactly one value with optional surrounding whitespace, no
/// leading zeros, no `NaN`/`Infinity`, no unescaped control characters, no
/// unpaired surrogates in `\u` escapes, well-formed UTF-8 inside strings, and
/// no numbers whose magnitude overflows `Double` (values that underflow
/// become zero). Duplicate object keys are accepted; the last value wins and
/// the member keeps the position of its first occurrence.
public struct JSONParser: Sendable {
  /// The nesting limit used unless another one is configured.
  public static let defaultMaxDepth = 256

  /// The maximum number of nested arrays and objects.
  public var maxDepth: Int

  /// Creates a parser with a nesting limit.
  public init(maxDepth: Int = JSONParser.defaultMaxDepth) {
    self.maxDepth = maxDepth
  }

  /// Parses one JSON document from raw memory (the fast path).
  public func parse(_ buffer: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
    let bytes = buffer.assumingMemoryBound(to: UInt8.self)
    var reader = JSONReader(bytes: bytes, maxDepth: maxDepth)
    return try reader.parseDocument()
  }

  /// Parses one JSON document from any collection of bytes.
  public func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
    let result = bytes.withContiguousStorageIfAvailable { buffer in
      parseResult(UnsafeRawBufferPointer(buffer))
    }
    if let result { return try result.get() }
    return try Array(bytes).withUnsafeBytes { parseResult($0) }.get()
  }

  /// Parses one JSON document from the UTF-8 of a string.
  public func parse(_ text: String) throws(JSONParseError) -> JSONValue {
    var text = text
    return try text.withUTF8 { parseResult(UnsafeRawBufferPointer($0)) }.get()
  }

  /// Parses one JSON document from raw memory with the given nesting limit.
  public static func parse(
    _ buffer: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth
  ) throws(JSONParseError) -> JSONValue {
    try JSONParser(maxDepth: maxDepth).parse(buffer)
  }

  /// Parses one JSON document from bytes with the given nesting limit.
  public static func parse(
    _ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth
  ) throws(JSONParseError) -> JSONValue {
    try JSONParser(maxDepth: maxDepth).parse(bytes)
  }

  /// Parses one JSON document from a string with the given nesting limit.
  public static func parse(
    _ text: String, maxDepth: Int = defaultMaxDepth
  ) throws(JSONParseError) -> JSONValue {
    try JSONParser(maxDepth: maxDepth).parse(text)
  }

  /// `parse(_:)` with the outcome captured, for use inside closures that
  /// cannot throw a typed error.
  private func parseResult(_ buffer: UnsafeRawBufferPointer) -> Result<JSONValue, JSONParseError> {
    do throws(JSONParseError) {
      return .success(try parse(buffer))
    } catch {
      return .failure(error)
    }
  }
}
