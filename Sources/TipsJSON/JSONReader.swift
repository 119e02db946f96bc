/// The byte-level state machine behind `JSONParser`.
///
/// Containers are parsed iteratively: the container being filled lives in
/// local variables and its open ancestors on an explicit stack, so nesting
/// depth costs heap, not call-stack frames.
struct JSONReader {
  /// The input.
  let bytes: UnsafeBufferPointer<UInt8>
  /// The read position.
  var index = 0
  /// The nesting limit.
  let maxDepth: Int
  /// Reusable buffer for strings that contain escapes.
  var scratch: [UInt8] = []

  init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
    self.bytes = bytes
    self.maxDepth = maxDepth
  }

  /// An open ancestor container.
  private enum Ancestor {
    case array([JSONValue])
    case object([JSONObject.Element], key: String)
  }

  /// What the value being parsed belongs to.
  private enum Slot {
    case top, array, object
  }

  // MARK: Errors

  private func error(_ kind: JSONParseError.Kind, at offset: Int) -> JSONParseError {
    JSONParseError(offset: offset, kind: kind)
  }

  private var endOfInput: JSONParseError {
    JSONParseError(offset: bytes.count, kind: .unexpectedEndOfInput)
  }

  // MARK: Document

  /// Parses a complete document, rejecting anything but whitespace after it.
  mutating func parseDocument() throws(JSONParseError) -> JSONValue {
    let value = try parseValue()
    skipWhitespace()
    if index < bytes.count { throw error(.trailingCharacters, at: index) }
    return value
  }

  @inline(__always)
  private mutating func skipWhitespace() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x0A, 0x0D, 0x09: index += 1
      default: return
      }
    }
  }

  /// Parses one value, including nested containers, without recursion.
  private mutating func parseValue() throws(JSONParseError) -> JSONValue {
    var ancestors: [Ancestor] = []
    var slot = Slot.top
    var depth = 0
    var elements: [JSONValue] = []
    var members: [JSONObject.Element] = []
    var key = ""

    nextValue: while true {
      skipWhitespace()
      guard index < bytes.count else { throw endOfInput }
      var value: JSONValue
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "{"), UInt8(ascii: "["):
        if depth >= maxDepth { throw error(.nestingTooDeep(limit: maxDepth), at: index) }
        let isObject = byte == UInt8(ascii: "{")
        index += 1
        skipWhitespace()
        let closer = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        if index < bytes.count && bytes[index] == closer {
          index += 1
          value = isObject ? .object(JSONObject()) : .array([])
          break
        }
        if ancestors.capacity == 0 && slot != .top { ancestors.reserveCapacity(8) }
        switch slot {
        case .top: break
        case .array:
          ancestors.append(.array(elements))
          elements = []
        case .object:
          ancestors.append(.object(members, key: key))
          members = []
        }
        depth += 1
        // Small containers then fill without regrowing.
        if isObject {
          slot = .object
          members.reserveCapacity(4)
          key = try parseKey()
        } else {
          slot = .array
          elements.reserveCapacity(4)
        }
        continue nextValue
      case UInt8(ascii: "\""):
        value = .string(try parseString())
      case UInt8(ascii: "t"):
        try expectLiteral("true")
        value = .bool(true)
      case UInt8(ascii: "f"):
        try expectLiteral("false")
        value = .bool(false)
      case UInt8(ascii: "n"):
        try expectLiteral("null")
        value = .null
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        value = try parseNumber()
      default:
        throw error(.expectedValue(found: byte), at: index)
      }

      // Attach the finished value to its parent; closing a container
      // finishes another value, so this loops until more input is needed.
      while true {
        switch slot {
        case .top:
          return value
        case .array:
          elements.append(value)
          skipWhitespace()
          guard index < bytes.count else { throw endOfInput }
          if bytes[index] == UInt8(ascii: ",") {
            index += 1
            continue nextValue
          }
          guard bytes[index] == UInt8(ascii: "]") else {
            throw error(.expectedCommaOrArrayEnd, at: index)
          }
          index += 1
          value = .array(elements)
          elements = []
        case .object:
          members.append((key, value))
          skipWhitespace()
          guard index < bytes.count else { throw endOfInput }
          if bytes[index] == UInt8(ascii: ",") {
            index += 1
            key = try parseKey()
            continue nextValue
          }
          guard bytes[index] == UInt8(ascii: "}") else {
            throw error(.expectedCommaOrObjectEnd, at: index)
          }
          index += 1
          value = .object(JSONObject(parsedMembers: members))
          members = []
        }
        depth -= 1
        switch ancestors.popLast() {
        case nil:
          slot = .top
        case .array(let saved)?:
          elements = saved
          slot = .array
        case .object(let saved, let savedKey)?:
          members = saved
          key = savedKey
          slot = .object
        }
      }
    }
  }

  /// Parses `"key" :` and returns the key.
  private mutating func parseKey() throws(JSONParseError) -> String {
    skipWhitespace()
    guard index < bytes.count else { throw endOfInput }
    guard bytes[index] == UInt8(ascii: "\"") else { throw error(.expectedObjectKey, at: index) }
    let key = try parseString()
    skipWhitespace()
    guard index < bytes.count else { throw endOfInput }
    guard bytes[index] == UInt8(ascii: ":") else { throw error(.expectedColon, at: index) }
    index += 1
    return key
  }

  /// Matches `literal` at the read position.
  private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
    let start = index
    let count = literal.utf8CodeUnitCount
    let expected = literal.utf8Start
    for k in 0..<count {
      guard start + k < bytes.count else { throw endOfInput }
      guard bytes[start + k] == expected[k] else {
        throw error(.invalidLiteral(expected: literal.description), at: start)
      }
    }
    index = start + count
  }

  // MARK: Strings

  /// Parses a string starting at its opening quote.
  private mutating func parseString() throws(JSONParseError) -> String {
    index += 1
    let start = index
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        index += 1
        return text
      }
      if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
      if byte < 0x20 { throw error(.controlCharacterInString, at: index) }
      if byte < 0x80 {
        index += 1
      } else {
        try skipUTF8Sequence()
      }
    }
    throw endOfInput
  }

  /// Continues a string that contains escapes, decoding into `scratch`.
  private mutating func parseEscapedString(from start: Int) throws(JSONParseError) -> String {
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
    while index < bytes.count {
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "\""):
        index += 1
        return String(decoding: scratch, as: UTF8.self)
      case UInt8(ascii: "\\"):
        try parseEscape()
      case 0..<0x20:
        throw error(.controlCharacterInString, at: index)
      case 0x20..<0x80:
        scratch.append(byte)
        index += 1
      default:
        let sequenceStart = index
        try skipUTF8Sequence()
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[sequenceStart..<index]))
      }
    }
    throw endOfInput
  }

  /// Decodes the escape at the read position (a backslash) into `scratch`.
  private mutating func parseEscape() throws(JSONParseError) {
    let escapeStart = index
    guard index + 1 < bytes.count else { throw endOfInput }
    let decoded: UInt8
    switch bytes[index + 1] {
    case UInt8(ascii: "\""): decoded = 0x22
    case UInt8(ascii: "\\"): decoded = 0x5C
    case UInt8(ascii: "/"): decoded = 0x2F
    case UInt8(ascii: "b"): decoded = 0x08
    case UInt8(ascii: "f"): decoded = 0x0C
    case UInt8(ascii: "n"): decoded = 0x0A
    case UInt8(ascii: "r"): decoded = 0x0D
    case UInt8(ascii: "t"): decoded = 0x09
    case UInt8(ascii: "u"):
      var scalar = try hexQuad(at: index + 2)
      index += 6
      if (0xD800...0xDBFF).contains(scalar) {
        // A high surrogate must be followed by a `\u` escape.
        if index < bytes.count && bytes[index] != UInt8(ascii: "\\") {
          throw error(.invalidSurrogate, at: escapeStart)
        }
        guard index + 1 < bytes.count else { throw endOfInput }
        guard bytes[index + 1] == UInt8(ascii: "u") else { throw error(.invalidSurrogate, at: escapeStart) }
        let low = try hexQuad(at: index + 2)
        guard (0xDC00...0xDFFF).contains(low) else { throw error(.invalidSurrogate, at: index) }
        index += 6
        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
      } else if (0xDC00...0xDFFF).contains(scalar) {
        throw error(.invalidSurrogate, at: escapeStart)
      }
      appendUTF8(scalar)
      return
    default:
      throw error(.invalidEscape, at: escapeStart)
    }
    scratch.append(decoded)
    index += 2
  }

  /// Reads four hex digits at `offset`.
  private func hexQuad(at offset: Int) throws(JSONParseError) -> UInt32 {
    var value: UInt32 = 0
    for position in offset..<offset + 4 {
      guard position < bytes.count else { throw endOfInput }
      let byte = bytes[position]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte &- UInt8(ascii: "A") &+ 10
      default: throw error(.invalidUnicodeEscape, at: position)
      }
      value = value << 4 | UInt32(digit)
    }
    return value
  }

  /// Appends the UTF-8 encoding of a (valid, non-surrogate) scalar.
  private mutating func appendUTF8(_ scalar: UInt32) {
    switch scalar {
    case 0..<0x80:
      scratch.append(UInt8(scalar))
    case 0x80..<0x800:
      scratch.append(UInt8(0xC0 | scalar >> 6))
      scratch.append(UInt8(0x80 | scalar & 0x3F))
    case 0x800..<0x10000:
      scratch.append(UInt8(0xE0 | scalar >> 12))
      scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
      scratch.append(UInt8(0x80 | scalar & 0x3F))
    default:
      scratch.append(UInt8(0xF0 | scalar >> 18))
      scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
      scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
      scratch.append(UInt8(0x80 | scalar & 0x3F))
    }
  }

  /// Validates one multi-byte UTF-8 sequence (RFC 3629: no overlongs, no
  /// surrogates, nothing above U+10FFFF) and advances past it. Errors point
  /// at the sequence's first byte.
  private mutating func skipUTF8Sequence() throws(JSONParseError) {
    let lead = bytes[index]
    var low: UInt8 = 0x80
    var high: UInt8 = 0xBF
    let continuationCount: Int
    switch lead {
    case 0xC2...0xDF: continuationCount = 1
    case 0xE0: continuationCount = 2; low = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: continuationCount = 2
    case 0xED: continuationCount = 2; high = 0x9F
    case 0xF0: continuationCount = 3; low = 0x90
    case 0xF1...0xF3: continuationCount = 3
    case 0xF4: continuationCount = 3; high = 0x8F
    default: throw error(.invalidUTF8, at: index)
    }
    guard index + continuationCount < bytes.count else { throw error(.invalidUTF8, at: index) }
    let second = bytes[index + 1]
    guard second >= low && second <= high else { throw error(.invalidUTF8, at: index) }
    for k in 2..<(continuationCount + 1) where bytes[index + k] & 0xC0 != 0x80 {
      throw error(.invalidUTF8, at: index)
    }
    index += continuationCount + 1
  }

  // MARK: Numbers

  /// Parses a number per the RFC 8259 grammar. Integers that fit `Int64`
  /// become `.int`; everything else `.double`, rejecting overflow.
  private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
    let start = index
    let negative = bytes[index] == UInt8(ascii: "-")
    if negative { index += 1 }
    guard index < bytes.count else { throw endOfInput }

    var mantissa: UInt64 = 0
    var significantDigits = 0
    var truncated = false
    var exponent = 0

    let first = bytes[index]
    if first == UInt8(ascii: "0") {
      index += 1
      if index < bytes.count && Self.isDigit(bytes[index]) { throw error(.leadingZero, at: index) }
    } else if Self.isDigit(first) {
      while index < bytes.count, Self.isDigit(bytes[index]) {
        if significantDigits < 19 {
          mantissa = mantissa &* 10 &+ UInt64(bytes[index] &- 0x30)
          if mantissa != 0 { significantDigits += 1 }
        } else {
          truncated = true
          exponent += 1
        }
        index += 1
      }
    } else {
      throw error(.expectedDigit, at: index)
    }

    var isInteger = true
    if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
      isInteger = false
      index += 1
      guard index < bytes.count else { throw endOfInput }
      guard Self.isDigit(bytes[index]) else { throw error(.expectedDigit, at: index) }
      while index < bytes.count, Self.isDigit(bytes[index]) {
        if significantDigits < 19 {
          mantissa = mantissa &* 10 &+ UInt64(bytes[index] &- 0x30)
          if mantissa != 0 { significantDigits += 1 }
          exponent -= 1
        } else {
          truncated = true
        }
        index += 1
      }
    }

    if index < bytes.count && (bytes[index] | 0x20) == UInt8(ascii: "e") {
      isInteger = false
      index += 1
      guard index < bytes.count else { throw endOfInput }
      var exponentNegative = false
      if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
        exponentNegative = bytes[index] == UInt8(ascii: "-")
        index += 1
        guard index < bytes.count else { throw endOfInput }
      }
      guard Self.isDigit(bytes[index]) else { throw error(.expectedDigit, at: index) }
      var explicit = 0
      while index < bytes.count, Self.isDigit(bytes[index]) {
        if explicit < 1_000_000 { explicit = explicit * 10 + Int(bytes[index] &- 0x30) }
        index += 1
      }
      exponent += exponentNegative ? -explicit : explicit
    }

    if isInteger && !truncated {
      if negative {
        if mantissa <= UInt64(Int64.max) { return .int(-Int64(mantissa)) }
        if mantissa == UInt64(Int64.max) + 1 { return .int(.min) }
      } else if mantissa <= UInt64(Int64.max) {
        return .int(Int64(mantissa))
      }
    }

    // Clinger's fast path: both operands exact, so one rounding is correct.
    if !truncated && mantissa <= 1 << 53 && (mantissa == 0 || (-22...22).contains(exponent)) {
      var value = Double(mantissa)
      if mantissa != 0 {
        value = exponent < 0 ? value / Self.powerOfTen(-exponent) : value * Self.powerOfTen(exponent)
      }
      return .double(negative ? -value : value)
    }

    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    guard let value = Double(text), value.isFinite else { throw error(.numberOutOfRange, at: start) }
    return .double(value)
  }

  @inline(__always)
  private static func isDigit(_ byte: UInt8) -> Bool {
    byte &- UInt8(ascii: "0") < 10
  }

  /// Exact powers of ten 10^0 ... 10^22.
  private static let powersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
  ]

  @inline(__always)
  private static func powerOfTen(_ exponent: Int) -> Double {
    powersOfTen[exponent]
  }
}
