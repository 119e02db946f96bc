import Testing
import TipsJSON

/// Parses `text`, failing the test on error.
func parse(_ text: String) throws -> JSONValue {
  try JSONParser.parse(text)
}

@Suite struct JSONParserTests {
  @Test func scalars() throws {
    #expect(try parse("null") == .null)
    #expect(try parse("true") == .bool(true))
    #expect(try parse("false") == .bool(false))
    #expect(try parse("\"hi\"") == .string("hi"))
    #expect(try parse("0") == .int(0))
    #expect(try parse("42") == .int(42))
  }

  @Test func surroundingWhitespaceIsAllowed() throws {
    #expect(try parse(" \t\r\n [ 1 , 2 ] \n") == [1, 2])
    #expect(try parse("\n{ \"a\" :\t1 }\r\n") == ["a": 1])
  }

  @Test func containers() throws {
    let value = try parse(#"{"a":[1,{"b":null},[]],"c":{},"d":"x"}"#)
    #expect(value == ["a": [1, ["b": nil], []], "c": [:], "d": "x"])
    #expect(value["a"]?[1]?["b"]?.isNull == true)
    #expect(value.objectValue?.keys == ["a", "c", "d"])
  }

  @Test func objectKeepsInsertionOrder() throws {
    let value = try parse(#"{"z":1,"a":2,"m":3}"#)
    #expect(value.objectValue?.keys == ["z", "a", "m"])
    #expect(value.jsonString == #"{"z":1,"a":2,"m":3}"#)
  }

  @Test func duplicateKeysLastWins() throws {
    let value = try parse(#"{"a":1,"b":2,"a":3}"#)
    #expect(value.objectValue?.count == 2)
    #expect(value["a"] == 3)
    #expect(value.objectValue?.keys == ["a", "b"])
  }

  @Test func duplicateKeysInLargeObjectLastWins() throws {
    var text = "{"
    for i in 0..<40 { text += "\"k\(i)\":\(i)," }
    text += #""k7":"last"}"#
    let object = try #require(try parse(text).objectValue)
    #expect(object.count == 40)
    #expect(object["k7"] == "last")
    #expect(object.keys.first == "k0")
  }

  @Test func integers() throws {
    #expect(try parse("-0") == .int(0))
    #expect(try parse("-17") == .int(-17))
    #expect(try parse("9223372036854775807") == .int(.max))
    #expect(try parse("-9223372036854775808") == .int(.min))
    if case .int = try parse("123") {} else { Issue.record("123 should be .int") }
  }

  @Test func bigIntegersBecomeDoubles() throws {
    let big = try parse("9223372036854775808")
    guard case .double(let d) = big else {
      Issue.record("expected .double, got \(big)")
      return
    }
    #expect(d == 9223372036854775808.0)
    #expect(try parse("-9223372036854775809") == .double(-9223372036854775809.0))
    #expect(try parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
  }

  @Test func fractionsAndExponentsAreDoubles() throws {
    let cases: [(String, Double)] = [
      ("1.5", 1.5), ("-0.25", -0.25), ("1e3", 1000), ("1E+3", 1000), ("25e-1", 2.5),
      ("0.1", 0.1), ("3.141592653589793", 3.141592653589793), ("1.7976931348623157e308", .greatestFiniteMagnitude),
      ("5e-324", .leastNonzeroMagnitude), ("2.2250738585072014e-308", 2.2250738585072014e-308),
      ("0.30000000000000004", 0.30000000000000004), ("123456789.123456789e-5", 1234.56789123456789),
      ("1e-400", 0), ("0e999999999999", 0), ("0.000001", 0.000001), ("9007199254740993.0", 9007199254740992),
    ]
    for (text, expected) in cases {
      let value = try parse(text)
      guard case .double(let d) = value else {
        Issue.record("\(text) should parse as .double, got \(value)")
        continue
      }
      #expect(d == expected, "\(text)")
    }
  }

  @Test func negativeZeroDoubleKeepsSign() throws {
    guard case .double(let d) = try parse("-0.0") else {
      Issue.record("-0.0 should be a double")
      return
    }
    #expect(d == 0 && d.sign == .minus)
  }

  @Test func escapes() throws {
    #expect(try parse(#""\" \\ \/ \b \f \n \r \t""#) == .string("\" \\ / \u{8} \u{C} \n \r \t"))
    #expect(try parse(#""\u0041\u00e9\u4E2D\u0000""#) == .string("A\u{E9}\u{4E2D}\u{0}"))
    #expect(try parse(#""a\nb""#) == .string("a\nb"))
  }

  @Test func surrogatePairs() throws {
    #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
    #expect(try parse(#""x\uD834\uDD1Ey""#) == .string("x𝄞y"))
  }

  @Test func rawUnicode() throws {
    let text = "\"héllo 中文 😀 👩‍👩‍👧\""
    #expect(try parse(text) == .string("héllo 中文 😀 👩‍👩‍👧"))
    #expect(try parse("{\"ключ\":\"значение\"}") == ["ключ": "значение"])
  }

  @Test func acceptsEveryCollectionKind() throws {
    let bytes = Array(#"{"a":[true]}"#.utf8)
    #expect(try JSONParser.parse(bytes) == ["a": [true]])
    #expect(try JSONParser.parse(bytes[...]) == ["a": [true]])
    #expect(try bytes.withUnsafeBytes { buffer in try JSONParser.parse(buffer) } == ["a": [true]])
    #expect(try JSONParser.parse(#"{"a":[true]}"#.utf8) == ["a": [true]])
    #expect(try JSONParser.parse(AnyCollection(bytes)) == ["a": [true]])
  }

  @Test func depthLimitIsConfigurable() throws {
    let nested = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
    #expect(throws: JSONParseError.self) { try JSONParser.parse(nested) }
    let value = try JSONParser(maxDepth: 300).parse(nested)
    #expect(value.arrayValue?.count == 1)
    let exact = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
    #expect(try JSONParser.parse(exact).arrayValue?.count == 1)
  }

  /// Size and depth cost heap, never the call stack: a 200,000-element array parses whole, and 200,000 levels of
  /// nesting are a bounded error by default and, where the limit allows them, parse without recursion (deep enough to
  /// overflow any thread's stack if they did not). How fast: `make bench`, `json.large_array_*`.
  @Test func largeAndDeepInputs() throws {
    let count = 200_000
    var text = "["
    for i in 0..<count { text += i == 0 ? "\(i)" : ",\(i)" }
    text += "]"
    let elements = try #require(try JSONParser.parse(text).arrayValue)
    #expect(elements.count == count)
    #expect(elements.indices.allSatisfy { elements[$0] == .int(Int64($0)) }, "every element, in order")

    let deep = String(repeating: "[", count: count) + String(repeating: "]", count: count)
    let limit = JSONParser.defaultMaxDepth
    #expect(throws: JSONParseError(offset: limit, kind: .nestingTooDeep(limit: limit))) { try JSONParser.parse(deep) }
    var current = try JSONParser(maxDepth: count).parse(deep)
    // Walked down one level at a time, so the tree is freed iteratively too.
    var levels = 1
    while case .array(let inner) = current, let first = inner.first {
      current = first
      levels += 1
    }
    #expect(levels == count)
    #expect(current == [])
  }
}
