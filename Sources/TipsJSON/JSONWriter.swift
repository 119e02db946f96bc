/// Writes compact JSON text (no insignificant whitespace) into a byte array.
///
/// Besides `write(_:)` for whole values, the writer has low-level appenders
/// for streaming a reply without building a `JSONValue` first. Commas are
/// inserted automatically: every value written after another value in the
/// same container (or at the top level) is preceded by `,`, and `key(_:)`
/// starts a new object member.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.beginObject()
/// writer.key("id"); writer.writeInt(1)
/// writer.key("tags"); writer.beginArray(); writer.writeString("a"); writer.endArray()
/// writer.endObject()
/// // writer.bytes == Array(#"{"id":1,"tags":["a"]}"#.utf8)
/// ```
///
/// The writer does not check that calls nest properly; that is the caller's
/// responsibility.
public struct JSONWriter: Sendable {
  /// The text written so far.
  public var bytes: [UInt8]
  /// Whether the next value or key must be preceded by a comma.
  private var needsComma = false

  /// Creates an empty writer with room for `capacity` bytes.
  public init(reservingCapacity capacity: Int = 128) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  /// Starts a new top-level value after what was written (the next one needs no comma): for several messages written
  /// one after another into one buffer.
  public mutating func beginNextDocument() {
    needsComma = false
  }

  /// Clears the output, keeping its storage.
  public mutating func reset() {
    bytes.removeAll(keepingCapacity: true)
    needsComma = false
  }

  @inline(__always)
  private mutating func beforeValue() {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
    needsComma = true
  }

  // MARK: Whole values

  /// Writes a value.
  public mutating func write(_ value: JSONValue) {
    switch value {
    case .null:
      writeNull()
    case .bool(let b):
      writeBool(b)
    case .int(let i):
      writeInt(i)
    case .double(let d):
      writeDouble(d)
    case .string(let s):
      writeString(s)
    case .array(let elements):
      beginArray()
      for element in elements { write(element) }
      endArray()
    case .object(let object):
      beginObject()
      for (key, member) in object { self.key(key); write(member) }
      endObject()
    }
  }

  // MARK: Scalars

  /// Writes `null`.
  public mutating func writeNull() {
    beforeValue()
    bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
  }

  /// Writes `true` or `false`.
  public mutating func writeBool(_ value: Bool) {
    beforeValue()
    if value {
      bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
    } else {
      bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
    }
  }

  /// Writes an integer in decimal.
  public mutating func writeInt(_ value: Int64) {
    beforeValue()
    appendInteger(value)
  }

  /// Writes an integer in decimal.
  public mutating func writeInt(_ value: Int) {
    writeInt(Int64(value))
  }

  /// Writes a double in its shortest round-trip form; integral values keep
  /// a fraction (`2.0`) and non-finite values are written as `null`.
  public mutating func writeDouble(_ value: Double) {
    guard value.isFinite else {
      writeNull()
      return
    }
    beforeValue()
    var text = value.description
    text.withUTF8 { bytes.append(contentsOf: $0) }  // one copy (appending the UTF8View went byte by byte)
  }

  /// Writes a string literal, escaping `"`, `\` and control characters;
  /// other characters, including non-ASCII, are written as raw UTF-8.
  public mutating func writeString(_ value: String) {
    beforeValue()
    appendQuoted(value)
  }

  /// Writes already-encoded JSON text as one value. The bytes are not
  /// validated.
  public mutating func writeRaw(_ json: some Sequence<UInt8>) {
    beforeValue()
    bytes.append(contentsOf: json)
  }

  /// Writes already-encoded JSON text from raw memory as one value. The
  /// bytes are not validated.
  public mutating func writeRaw(_ json: UnsafeRawBufferPointer) {
    beforeValue()
    bytes.append(contentsOf: json)
  }

  // MARK: Containers

  /// Writes `{`; follow with `key(_:)`/value pairs and `endObject()`.
  public mutating func beginObject() {
    beforeValue()
    bytes.append(UInt8(ascii: "{"))
    needsComma = false
  }

  /// Writes `{` and then `literal` as it is: complete members, then a key and its colon
  /// (`"jsonrpc":"2.0","id":`); the next write is that key's value. The bytes are not validated.
  public mutating func beginObject(literalMembersThenKey literal: StaticString) {
    beforeValue()
    bytes.append(UInt8(ascii: "{"))
    appendLiteral(literal)
    needsComma = false
  }

  /// Writes an object key and its colon; the next write is its value.
  public mutating func key(_ key: String) {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
    appendQuoted(key)
    bytes.append(UInt8(ascii: ":"))
    needsComma = false
  }

  /// Writes an object key given as a literal that needs no escaping (printable ASCII without `"` or `\`), without
  /// checking each byte as ``key(_:)`` does.
  public mutating func key(literal: StaticString) {
    // Composed on the stack and appended at once: one capacity check instead of five.
    let count = literal.utf8CodeUnitCount
    let comma = needsComma
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count + 4) { buffer in
      var at = 0
      if comma {
        buffer[0] = UInt8(ascii: ",")
        at = 1
      }
      buffer[at] = UInt8(ascii: "\"")
      UnsafeMutableRawPointer(buffer.baseAddress! + at + 1).copyMemory(from: literal.utf8Start, byteCount: count)
      buffer[at + 1 + count] = UInt8(ascii: "\"")
      buffer[at + 2 + count] = UInt8(ascii: ":")
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<(at + 3 + count)]))
    }
    needsComma = false
  }

  /// Writes `}`.
  public mutating func endObject() {
    bytes.append(UInt8(ascii: "}"))
    needsComma = true
  }

  /// Writes `[`; follow with values and `endArray()`.
  public mutating func beginArray() {
    beforeValue()
    bytes.append(UInt8(ascii: "["))
    needsComma = false
  }

  /// Writes `]`.
  public mutating func endArray() {
    bytes.append(UInt8(ascii: "]"))
    needsComma = true
  }

  /// Writes one object member: `"key":value`.
  public mutating func member(_ key: String, _ value: JSONValue) {
    self.key(key)
    write(value)
  }

  // MARK: Primitive appenders (no comma handling)

  /// Appends the bytes of a literal.
  @inline(__always)
  private mutating func appendLiteral(_ literal: StaticString) {
    bytes.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
  }

  /// Appends a quoted, escaped string.
  mutating func appendQuoted(_ value: String) {
    var value = value
    value.withUTF8 { appendQuoted(utf8: $0) }
  }

  /// Appends a quoted, escaped string given as UTF-8.
  mutating func appendQuoted(utf8: UnsafeBufferPointer<UInt8>) {
    bytes.append(UInt8(ascii: "\""))
    var runStart = 0
    for i in utf8.indices {
      let byte = utf8[i]
      if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") { continue }
      if runStart < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
      runStart = i + 1
      bytes.append(UInt8(ascii: "\\"))
      switch byte {
      case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
      case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
      case 0x0A: bytes.append(UInt8(ascii: "n"))
      case 0x0D: bytes.append(UInt8(ascii: "r"))
      case 0x09: bytes.append(UInt8(ascii: "t"))
      case 0x08: bytes.append(UInt8(ascii: "b"))
      case 0x0C: bytes.append(UInt8(ascii: "f"))
      default:
        let hex: StaticString = "0123456789abcdef"
        bytes.append(contentsOf: [
          UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
          hex.utf8Start[Int(byte >> 4)], hex.utf8Start[Int(byte & 0xF)],
        ])
      }
    }
    if runStart < utf8.count {
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
    }
    bytes.append(UInt8(ascii: "\""))
  }

  /// Appends an integer in decimal.
  mutating func appendInteger(_ value: Int64) {
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    if magnitude < 10 {
      bytes.append(UInt8(ascii: "0") &+ UInt8(magnitude))
      return
    }
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
      var position = digits.count
      repeat {
        position -= 1
        digits[position] = UInt8(ascii: "0") &+ UInt8(magnitude % 10)
        magnitude /= 10
      } while magnitude > 0
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[position...]))
    }
  }
}

// MARK: - Composed output

extension JSONWriter {
  /// Appends one complete top-level value (a message, as after ``beginNextDocument()``) composed by `body` in a stack
  /// buffer of `capacity` bytes, with a single append to ``bytes`` rather than one per piece. `body` must write at
  /// most `capacity` bytes (``ByteComposer`` traps otherwise).
  @inlinable
  public mutating func appendComposed(capacity: Int, _ body: (inout ByteComposer) -> Void) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
      var composer = ByteComposer(buffer)
      body(&composer)
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<composer.count]))
    }
    endComposed()
  }

  /// After a composed value: the next one needs a comma.
  @usableFromInline
  mutating func endComposed() {
    needsComma = true
  }
}

/// Writes bytes into a fixed buffer (``JSONWriter/appendComposed(capacity:_:)``): literals and integers, no escaping.
public struct ByteComposer {
  @usableFromInline let buffer: UnsafeMutableBufferPointer<UInt8>
  /// Bytes written so far.
  public var count: Int { written }
  @usableFromInline var written = 0

  @inlinable
  init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
    self.buffer = buffer
  }

  /// Appends a literal's bytes as they are (JSON text that needs no escaping).
  @inlinable @inline(__always)
  public mutating func literal(_ text: StaticString) {
    let length = text.utf8CodeUnitCount
    precondition(written + length <= buffer.count, "ByteComposer: buffer too small")
    (buffer.baseAddress! + written).update(from: text.utf8Start, count: length)
    written += length
  }

  /// Appends an integer in decimal (at most 20 bytes: `-9223372036854775808`).
  @inlinable
  public mutating func integer(_ value: Int64) {
    precondition(written + 20 <= buffer.count, "ByteComposer: buffer too small")
    let base = buffer.baseAddress! + written
    var magnitude = value.magnitude
    var length = 0
    if value < 0 {
      base[0] = UInt8(ascii: "-")
      length = 1
    }
    // Digits written backwards at the end of the 20 bytes reserved, then moved into place.
    var position = 20
    repeat {
      position -= 1
      base[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
      magnitude /= 10
    } while magnitude > 0
    let digits = 20 - position
    if position != length { (base + length).update(from: base + position, count: digits) }
    written += length + digits
  }
}
