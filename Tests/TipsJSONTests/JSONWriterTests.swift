import Testing
import TipsJSON

/// The compact text the writer produces for one value.
func written(_ body: (inout JSONWriter) -> Void) -> String {
  var writer = JSONWriter()
  body(&writer)
  return String(decoding: writer.bytes, as: UTF8.self)
}

@Suite struct JSONWriterTests {
  @Test func scalars() {
    #expect(JSONValue.null.jsonString == "null")
    #expect(JSONValue.bool(true).jsonString == "true")
    #expect(JSONValue.bool(false).jsonString == "false")
    #expect(JSONValue.string("a").jsonString == #""a""#)
  }

  @Test(
    arguments: [
      (Int64(0), "0"), (7, "7"), (-7, "-7"), (10, "10"), (1234567890, "1234567890"),
      (.max, "9223372036854775807"), (.min, "-9223372036854775808"),
    ] as [(Int64, String)])
  func integers(value: Int64, text: String) {
    #expect(written { $0.writeInt(value) } == text)
    #expect(JSONValue.int(value).jsonString == text)
  }

  @Test(
    arguments: [
      (2.0, "2.0"), (-0.0, "-0.0"), (0.1, "0.1"), (1.5, "1.5"), (-2.5e-7, "-2.5e-07"),
      (1e16, "1e+16"), (0.30000000000000004, "0.30000000000000004"),
      (1.7976931348623157e308, "1.7976931348623157e+308"), (.leastNonzeroMagnitude, "5e-324"),
      (.infinity, "null"), (-.infinity, "null"), (.nan, "null"),
    ] as [(Double, String)])
  func doubles(value: Double, text: String) throws {
    #expect(written { $0.writeDouble(value) } == text)
    if value.isFinite {
      // Shortest round trip: reading the text back gives the same double.
      let parsed = try JSONParser.parse(text)
      #expect(parsed.doubleValue == value)
      #expect(parsed.doubleValue?.sign == value.sign)
    }
  }

  /// The literal forms write what the checked ones do, commas included.
  @Test func literalKeysAndPrefixes() {
    let checked = written {
      $0.beginObject()
      $0.key("jsonrpc"); $0.writeString("2.0")
      $0.key("id"); $0.writeInt(7)
      $0.key("result"); $0.beginObject(); $0.key("count"); $0.writeInt(1); $0.endObject()
      $0.endObject()
    }
    let literal = written {
      $0.beginObject(literalMembersThenKey: #""jsonrpc":"2.0","id":"#)
      $0.writeInt(7)
      $0.key(literal: "result"); $0.beginObject(); $0.key(literal: "count"); $0.writeInt(1); $0.endObject()
      $0.endObject()
    }
    #expect(literal == checked)
    #expect(checked == #"{"jsonrpc":"2.0","id":7,"result":{"count":1}}"#)
    // After another value the literal forms put the comma in.
    #expect(
      written {
        $0.beginArray(); $0.writeInt(1); $0.beginObject(literalMembersThenKey: #""a":"#); $0.writeNull();
        $0.endObject(); $0.endArray()
      }
        == #"[1,{"a":null}]"#)
  }

  @Test func everyEscape() {
    #expect(written { $0.writeString("\" \\ / \n \r \t \u{8} \u{C}") } == #""\" \\ / \n \r \t \b \f""#)
    #expect(written { $0.writeString("\u{0}\u{1}\u{1F}\u{7F}") } == "\"\\u0000\\u0001\\u001f\u{7F}\"")
    for scalar in 0..<0x20 {
      let text = written { $0.writeString(String(Character(Unicode.Scalar(UInt8(scalar))))) }
      #expect(text.hasPrefix("\"\\"), "U+\(scalar) must be escaped")
      #expect((try? JSONParser.parse(text)) == .string(String(Character(Unicode.Scalar(UInt8(scalar))))))
    }
  }

  @Test func nonASCIIIsWrittenRaw() {
    let text = "héllo 中文 😀 \u{2028}"
    let bytes = JSONValue.string(text).serialized()
    #expect(bytes == [0x22] + Array(text.utf8) + [0x22])
  }

  @Test func containersAreCompact() {
    let value: JSONValue = ["a": [1, 2.5, "x", nil, true], "b": [:], "c": []]
    #expect(value.jsonString == #"{"a":[1,2.5,"x",null,true],"b":{},"c":[]}"#)
    #expect(value.description == value.jsonString)
  }

  @Test func streamingHelpersInsertCommas() {
    let text = written { w in
      w.beginObject()
      w.key("id")
      w.writeInt(1)
      w.key("list")
      w.beginArray()
      w.beginObject()
      w.key("k")
      w.writeString("v")
      w.endObject()
      w.writeRaw(Array("{\"raw\":true}".utf8))
      w.beginArray()
      w.endArray()
      w.writeBool(false)
      w.endArray()
      w.member("m", ["x": 1])
      w.key("n")
      w.writeNull()
      w.key("d")
      w.writeDouble(3)
      w.endObject()
    }
    #expect(text == #"{"id":1,"list":[{"k":"v"},{"raw":true},[],false],"m":{"x":1},"n":null,"d":3.0}"#)
  }

  @Test func topLevelValuesAreCommaSeparatedAndResetClears() {
    var writer = JSONWriter()
    writer.writeInt(1)
    writer.writeString("a")
    #expect(String(decoding: writer.bytes, as: UTF8.self) == #"1,"a""#)
    writer.reset()
    writer.writeInt(2)
    #expect(writer.bytes == Array("2".utf8))
  }

  @Test func keysAreEscaped() {
    let value: JSONValue = ["a\"b\n": 1]
    #expect(value.jsonString == #"{"a\"b\n":1}"#)
  }

  @Test func prettyString() {
    let value: JSONValue = ["a": 1, "b": [true, nil], "c": [:], "d": [], "e": ["f": "g"]]
    let expected = """
      {
        "a": 1,
        "b": [
          true,
          null
        ],
        "c": {},
        "d": [],
        "e": {
          "f": "g"
        }
      }
      """
    #expect(value.prettyString(indent: 2) == expected)
    #expect(JSONValue.int(5).prettyString() == "5")
    #expect(JSONValue.array([1]).prettyString(indent: 4) == "[\n    1\n]")
  }
}
