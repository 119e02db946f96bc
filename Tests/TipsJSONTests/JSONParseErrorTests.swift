import Testing
import TipsJSON

/// The error thrown for `text`, or `nil` if it parsed.
func parseError(_ text: String, maxDepth: Int = JSONParser.defaultMaxDepth) -> JSONParseError? {
  parseError(Array(text.utf8), maxDepth: maxDepth)
}

/// The error thrown for `bytes`, or `nil` if they parsed.
func parseError(_ bytes: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) -> JSONParseError? {
  do throws(JSONParseError) {
    _ = try JSONParser.parse(bytes, maxDepth: maxDepth)
    return nil
  } catch {
    return error
  }
}

@Suite struct JSONParseErrorTests {
  @Test(arguments: [
    // Structure
    ("", 0, JSONParseError.Kind.unexpectedEndOfInput),
    ("   ", 3, .unexpectedEndOfInput),
    ("[1,2", 4, .unexpectedEndOfInput),
    ("{\"a\":1", 6, .unexpectedEndOfInput),
    ("{\"a\"", 4, .unexpectedEndOfInput),
    ("x", 0, .expectedValue(found: UInt8(ascii: "x"))),
    ("[1,]", 3, .expectedValue(found: UInt8(ascii: "]"))),
    ("[,1]", 1, .expectedValue(found: UInt8(ascii: ","))),
    ("{\"a\" 1}", 5, .expectedColon),
    ("{\"a\":1,}", 7, .expectedObjectKey),
    ("{1:2}", 1, .expectedObjectKey),
    ("{'a':1}", 1, .expectedObjectKey),
    ("{\"a\":1 \"b\":2}", 7, .expectedCommaOrObjectEnd),
    ("[1 2]", 3, .expectedCommaOrArrayEnd),
    ("{\"a\":1]", 6, .expectedCommaOrObjectEnd),
    ("[1}", 2, .expectedCommaOrArrayEnd),
    ("1 2", 2, .trailingCharacters),
    ("{} x", 3, .trailingCharacters),
    ("[]]", 2, .trailingCharacters),
    ("nul", 3, .unexpectedEndOfInput),
    ("nulL", 0, .invalidLiteral(expected: "null")),
    ("tRue", 0, .invalidLiteral(expected: "true")),
    ("[fals]", 1, .invalidLiteral(expected: "false")),
    ("truex", 4, .trailingCharacters),
    // Numbers
    ("01", 1, .leadingZero),
    ("-01", 2, .leadingZero),
    ("00.5", 1, .leadingZero),
    ("-", 1, .unexpectedEndOfInput),
    ("-a", 1, .expectedDigit),
    ("+1", 0, .expectedValue(found: UInt8(ascii: "+"))),
    (".5", 0, .expectedValue(found: UInt8(ascii: "."))),
    ("1.", 2, .unexpectedEndOfInput),
    ("1.e5", 2, .expectedDigit),
    ("1e", 2, .unexpectedEndOfInput),
    ("1e+", 3, .unexpectedEndOfInput),
    ("1ex", 2, .expectedDigit),
    ("NaN", 0, .expectedValue(found: UInt8(ascii: "N"))),
    ("Infinity", 0, .expectedValue(found: UInt8(ascii: "I"))),
    ("-Infinity", 1, .expectedDigit),
    ("1e400", 0, .numberOutOfRange),
    ("[-1.5e309]", 1, .numberOutOfRange),
    ("0x10", 1, .trailingCharacters),
    // Strings
    ("\"abc", 4, .unexpectedEndOfInput),
    ("\"a\tb\"", 2, .controlCharacterInString),
    ("\"a\nb\"", 2, .controlCharacterInString),
    ("\"\\x\"", 1, .invalidEscape),
    ("\"ab\\'\"", 3, .invalidEscape),
    ("\"\\u12\"", 5, .invalidUnicodeEscape),
    ("\"\\u12G4\"", 5, .invalidUnicodeEscape),
    ("\"\\uD800\"", 1, .invalidSurrogate),
    ("\"\\uD800\\n\"", 1, .invalidSurrogate),
    ("\"\\uD800\\u0041\"", 7, .invalidSurrogate),
    ("\"\\uDC00\"", 1, .invalidSurrogate),
    ("\"\\uDC00\\uD800\"", 1, .invalidSurrogate),
    ("\"\\", 2, .unexpectedEndOfInput),
  ])
  func rejects(text: String, offset: Int, kind: JSONParseError.Kind) throws {
    let error = try #require(parseError(text), "\(text.debugDescription) should not parse")
    #expect(error.kind == kind, "\(text.debugDescription)")
    #expect(error.offset == offset, "\(text.debugDescription)")
  }

  @Test func messageNamesTheOffset() throws {
    let error = try #require(parseError(#"{"jsonrpc" "2.0"}"#))
    #expect(error.offset == 11)
    #expect(error.description == "invalid JSON at byte 11: expected ':' after object key")
    #expect("\(try #require(parseError("x")))" == "invalid JSON at byte 0: expected a value, found 'x'")
    #expect(try #require(parseError([0x01])).message == "expected a value, found 0x01")
  }

  @Test(
    arguments: [
      [0x22, 0x80, 0x22],  // lone continuation byte
      [0x22, 0xC0, 0x80, 0x22],  // overlong NUL
      [0x22, 0xC1, 0xBF, 0x22],  // overlong
      [0x22, 0xE0, 0x80, 0x80, 0x22],  // overlong 3-byte
      [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-8 encoded surrogate
      [0x22, 0xF0, 0x80, 0x80, 0x80, 0x22],  // overlong 4-byte
      [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
      [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22],  // invalid lead
      [0x22, 0xFF, 0x22],  // invalid byte
      [0x22, 0xC3, 0x22],  // truncated sequence
      [0x22, 0xE2, 0x82, 0x22],  // truncated sequence
      [0x22, 0xE2, 0x82],  // truncated at end of input
    ] as [[UInt8]])
  func rejectsInvalidUTF8(bytes: [UInt8]) throws {
    let error = try #require(parseError(bytes))
    #expect(error.kind == .invalidUTF8)
    #expect(error.offset == 1)
  }

  @Test func invalidUTF8AfterEscapeIsRejected() throws {
    let error = try #require(parseError([0x22, 0x5C, 0x6E, 0x41, 0xC3, 0x28, 0x22]))
    #expect(error == JSONParseError(offset: 4, kind: .invalidUTF8))
  }

  @Test func nonASCIIOutsideStringsIsUnexpected() throws {
    let error = try #require(parseError([0x5B, 0xC3, 0xA9, 0x5D]))
    #expect(error == JSONParseError(offset: 1, kind: .expectedValue(found: 0xC3)))
  }

  @Test func deepNestingIsAnErrorNotACrash() throws {
    let deep = String(repeating: "[", count: 100_000)
    let error = try #require(parseError(deep))
    #expect(error == JSONParseError(offset: 256, kind: .nestingTooDeep(limit: 256)))
    let objects = String(repeating: #"{"a":"#, count: 100_000)
    #expect(parseError(objects)?.kind == .nestingTooDeep(limit: 256))
    #expect(parseError("[[[]]]", maxDepth: 2) == JSONParseError(offset: 2, kind: .nestingTooDeep(limit: 2)))
    #expect(parseError("[[]]", maxDepth: 2) == nil)
  }

  @Test func iterativeParserHandlesHugeConfiguredDepth() throws {
    let depth = 20_000
    let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    var current = try JSONParser(maxDepth: depth).parse(text)
    // Walk down and release one level at a time (a deep enum tree would
    // otherwise be freed recursively).
    var levels = 1
    while case .array(let elements) = current, let first = elements.first {
      current = first
      levels += 1
    }
    #expect(levels == depth)
    #expect(current == [])
  }
}
