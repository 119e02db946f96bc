import Testing
import TipsJSON

@Suite struct RoundTripTests {
  @Test(arguments: [
    "null", "true", "false", "0", "-1", "9223372036854775807", "-9223372036854775808",
    "1.5", "-0.0", "1e+100", "2.0", "0.1", #""""#, #""a\"b\\c\n\u0000""#, #""😀 中文""#,
    "[]", "{}", "[1,[2,[3,{}]]]", #"{"b":1,"a":{"c":[null,true,"x"]}}"#,
    #"{"jsonrpc":"2.0","id":"abc","method":"events/donate","params":{"id":"e","n":-3.25}}"#,
  ])
  func compactTextRoundTrips(text: String) throws {
    let value = try JSONParser.parse(text)
    #expect(value.jsonString == text)
    #expect(try JSONParser.parse(value.serialized()) == value)
  }

  @Test func prettyTextParsesBack() throws {
    let value = try JSONParser.parse(#"{"a":[1,{"b":"\n"}],"c":{},"d":[[]]}"#)
    #expect(try JSONParser.parse(value.prettyString()) == value)
  }

  @Test func allScalarsSurviveStringRoundTrip() throws {
    var text = ""
    for scalar in stride(from: 0, through: 0x10FFFF, by: 97) {
      if let s = Unicode.Scalar(UInt32(scalar)) { text.unicodeScalars.append(s) }
    }
    let value = JSONValue.string(text)
    #expect(try JSONParser.parse(value.serialized()) == value)
  }
}
