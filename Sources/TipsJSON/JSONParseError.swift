/// Why and where JSON text was rejected by `JSONParser`.
///
/// `description` reads like `invalid JSON at byte 17: expected ':' after
/// object key`.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The kinds of problems the parser reports.
  public enum Kind: Sendable, Equatable {
    /// The input ended before the value was complete.
    case unexpectedEndOfInput
    /// A value was expected but this byte cannot start one.
    case expectedValue(found: UInt8)
    /// A literal (`true`, `false`, `null`) was misspelt.
    case invalidLiteral(expected: String)
    /// An object member must start with a string key.
    case expectedObjectKey
    /// An object key must be followed by a colon.
    case expectedColon
    /// An object member must be followed by `,` or `}`.
    case expectedCommaOrObjectEnd
    /// An array element must be followed by `,` or `]`.
    case expectedCommaOrArrayEnd
    /// Non-whitespace bytes follow the top-level value.
    case trailingCharacters
    /// A number has a superfluous leading zero, like `01`.
    case leadingZero
    /// A digit was required (after `-`, `.`, or in an exponent).
    case expectedDigit
    /// A number is too large in magnitude to be represented by a `Double`.
    case numberOutOfRange
    /// A string contains an unescaped control character (U+0000–U+001F).
    case controlCharacterInString
    /// A backslash is followed by an unknown escape character.
    case invalidEscape
    /// A `\u` escape is not followed by four hexadecimal digits.
    case invalidUnicodeEscape
    /// A `\u` escape encodes an unpaired or misordered UTF-16 surrogate.
    case invalidSurrogate
    /// A string contains bytes that are not well-formed UTF-8.
    case invalidUTF8
    /// Arrays and objects are nested deeper than the limit.
    case nestingTooDeep(limit: Int)
  }

  /// The byte offset of the problem; the input length for a premature end.
  public var offset: Int
  /// What went wrong.
  public var kind: Kind

  /// Creates an error.
  public init(offset: Int, kind: Kind) {
    self.offset = offset
    self.kind = kind
  }

  /// The human-readable reason, without the position.
  public var message: String {
    switch kind {
    case .unexpectedEndOfInput: return "unexpected end of input"
    case .expectedValue(let byte): return "expected a value, found \(Self.describe(byte))"
    case .invalidLiteral(let expected): return "invalid literal, expected '\(expected)'"
    case .expectedObjectKey: return "expected a string object key"
    case .expectedColon: return "expected ':' after object key"
    case .expectedCommaOrObjectEnd: return "expected ',' or '}' after object member"
    case .expectedCommaOrArrayEnd: return "expected ',' or ']' after array element"
    case .trailingCharacters: return "unexpected data after the JSON value"
    case .leadingZero: return "leading zeros are not allowed in numbers"
    case .expectedDigit: return "expected a digit"
    case .numberOutOfRange: return "number is out of range"
    case .controlCharacterInString: return "unescaped control character in string"
    case .invalidEscape: return "invalid escape sequence in string"
    case .invalidUnicodeEscape: return "expected four hex digits after '\\u'"
    case .invalidSurrogate: return "unpaired UTF-16 surrogate in '\\u' escape"
    case .invalidUTF8: return "invalid UTF-8 in string"
    case .nestingTooDeep(let limit): return "nesting deeper than \(limit) levels"
    }
  }

  /// `invalid JSON at byte N: <message>`.
  public var description: String {
    "invalid JSON at byte \(offset): \(message)"
  }

  /// A printable rendering of a byte for messages: `'x'` or `0xNN`.
  private static func describe(_ byte: UInt8) -> String {
    if byte > 0x20 && byte < 0x7F {
      return "'\(Character(Unicode.Scalar(byte)))'"
    }
    let hex = String(byte, radix: 16, uppercase: true)
    return byte < 0x10 ? "0x0\(hex)" : "0x\(hex)"
  }
}
