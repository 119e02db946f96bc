/// A cursor over JSON text that reads only the *plain* forms of tokens — strings of printable ASCII without escapes,
/// integers of at most 18 digits, the three literals, flat objects — and gives up (returns nil) on anything else.
///
/// It backs fast paths that read a known message shape straight from the bytes: whatever it accepts, it reads to
/// exactly the value ``JSONParser`` would produce, and anything it does not accept (an escape, non-ASCII text, a
/// fraction, an exponent, a long number, an array, deeper nesting, a repeated key, a syntax error) makes the caller
/// fall back to ``JSONParser``, which then produces the value or the error. It never reports errors itself.
public struct PlainScanner {
  /// The input.
  public let bytes: UnsafeBufferPointer<UInt8>
  /// The read position.
  public var index = 0

  @inlinable
  public init(_ bytes: UnsafeBufferPointer<UInt8>) {
    self.bytes = bytes
  }

  /// Whether only whitespace is left.
  public mutating func atEnd() -> Bool {
    skipWhitespace()
    return index == bytes.count
  }

  @inlinable @inline(__always)
  public mutating func skipWhitespace() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x0A, 0x0D, 0x09: index += 1
      default: return
      }
    }
  }

  /// Skips whitespace and consumes `byte` if it is next.
  @inlinable @inline(__always)
  public mutating func consume(_ byte: UInt8) -> Bool {
    skipWhitespace()
    guard index < bytes.count, bytes[index] == byte else { return false }
    index += 1
    return true
  }

  /// The next byte after whitespace, not consumed.
  @inlinable @inline(__always)
  public mutating func peek() -> UInt8? {
    skipWhitespace()
    return index < bytes.count ? bytes[index] : nil
  }

  /// A plain string (printable ASCII, no escapes): the range of its contents, after the opening quote. nil for
  /// anything else.
  public mutating func plainString() -> Range<Int>? {
    skipWhitespace()
    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
    let start = index + 1
    var i = start
    // Eight bytes at a time while they are all plain (no quote, backslash, control character or non-ASCII byte). In
    // a word that is not, the lowest flagged byte is the first that is not plain (a flag from a borrow only ever
    // lands above a byte flagged rightly): a quote there ends the string; anything else is the full parser's.
    if let base = bytes.baseAddress {
      let ones: UInt64 = 0x0101_0101_0101_0101
      let highs: UInt64 = 0x8080_8080_8080_8080
      while i + 8 <= bytes.count {
        let word = UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self))
        let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        // A byte is flagged when it is zero (for `quote`, `backslash`), below 0x20, or has its high bit set.
        let special =
          ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word) | word
        let flagged = special & highs
        if flagged == 0 {
          i += 8
          continue
        }
        i += flagged.trailingZeroBitCount >> 3
        guard base[i] == UInt8(ascii: "\"") else { return nil }
        index = i + 1
        return start..<i
      }
    }
    while i < bytes.count {
      let byte = bytes[i]
      if byte == UInt8(ascii: "\"") {
        index = i + 1
        return start..<i
      }
      // Control characters, escapes and non-ASCII bytes: the full parser's business.
      guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
      i += 1
    }
    return nil
  }

  /// A plain string as a `String`.
  public mutating func plainStringValue() -> String? {
    guard let range = plainString() else { return nil }
    return string(range)
  }

  /// The text of a range of the input (ASCII already checked by ``plainString()``).
  public func string(_ range: Range<Int>) -> String {
    String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
  }

  /// Whether the bytes of `range` are `literal`.
  @inlinable @inline(__always)
  public func matches(_ range: Range<Int>, _ literal: StaticString) -> Bool {
    guard range.count == literal.utf8CodeUnitCount else { return false }
    let expected = literal.utf8Start
    for k in 0..<range.count where bytes[range.lowerBound + k] != expected[k] { return false }
    return true
  }

  /// An integer of at most 18 digits (`-?(0|[1-9][0-9]*)`, no fraction or exponent). nil for anything else.
  public mutating func plainInteger() -> Int64? {
    skipWhitespace()
    var i = index
    let negative = i < bytes.count && bytes[i] == UInt8(ascii: "-")
    if negative { i += 1 }
    let digitsStart = i
    var value: Int64 = 0
    while i < bytes.count, bytes[i] &- UInt8(ascii: "0") < 10 {
      value = value &* 10 &+ Int64(bytes[i] &- UInt8(ascii: "0"))
      i += 1
    }
    let digits = i - digitsStart
    guard digits > 0, digits <= 18 else { return nil }
    // A leading zero is an error for the full parser; `.`, `e` and `E` make a double.
    if digits > 1 && bytes[digitsStart] == UInt8(ascii: "0") { return nil }
    if i < bytes.count {
      let next = bytes[i]
      if next == UInt8(ascii: ".") || next | 0x20 == UInt8(ascii: "e") { return nil }
    }
    index = i
    return negative ? -value : value
  }

  /// `literal` (`true`, `false`, `null`) if it is next.
  public mutating func consumeLiteral(_ literal: StaticString) -> Bool {
    skipWhitespace()
    let count = literal.utf8CodeUnitCount
    guard index + count <= bytes.count, matches(index..<index + count, literal) else { return false }
    index += count
    return true
  }

  /// A plain scalar: a plain string, a plain integer, `true`, `false` or `null`.
  public mutating func plainScalar() -> JSONValue? {
    switch peek() {
    case UInt8(ascii: "\"")?: return plainStringValue().map(JSONValue.string)
    case UInt8(ascii: "t")?: return consumeLiteral("true") ? .bool(true) : nil
    case UInt8(ascii: "f")?: return consumeLiteral("false") ? .bool(false) : nil
    case UInt8(ascii: "n")?: return consumeLiteral("null") ? .null : nil
    case let byte? where byte == UInt8(ascii: "-") || byte &- UInt8(ascii: "0") < 10:
      return plainInteger().map(JSONValue.int)
    default: return nil
    }
  }

  /// A plain object: plain keys, no key twice, each value a plain scalar or (`nested` levels deep) a plain object
  /// itself. nil for anything else.
  public mutating func plainObject(nested: Int) -> JSONObject? {
    guard consume(UInt8(ascii: "{")) else { return nil }
    if consume(UInt8(ascii: "}")) { return JSONObject() }
    var members: [JSONObject.Element] = []
    members.reserveCapacity(4)
    while true {
      guard let range = plainString(), consume(UInt8(ascii: ":")) else { return nil }
      let key = string(range)
      for earlier in members where earlier.key == key { return nil }
      let value: JSONValue
      if peek() == UInt8(ascii: "{") {
        guard nested > 0, let object = plainObject(nested: nested - 1) else { return nil }
        value = .object(object)
      } else {
        guard let scalar = plainScalar() else { return nil }
        value = scalar
      }
      members.append((key, value))
      if consume(UInt8(ascii: ",")) { continue }
      guard consume(UInt8(ascii: "}")) else { return nil }
      return JSONObject(uniqueMembers: members)
    }
  }
}
