import Testing
import TipsJSON

@Suite struct JSONValueTests {
  @Test func numericEquality() {
    #expect(JSONValue.int(3) == .double(3.0))
    #expect(JSONValue.double(3.0) == .int(3))
    #expect(JSONValue.int(3) != .double(3.5))
    #expect(JSONValue.int(0) == .double(-0.0))
    #expect(JSONValue.int(.max) != .double(9223372036854775808.0))
    #expect(JSONValue.int(1) != .bool(true))
    #expect(JSONValue.string("1") != .int(1))
  }

  @Test func hashingMatchesNumericEquality() {
    let set: Set<JSONValue> = [.int(3), .double(3.0), .double(-0.0), .int(0), .double(0.5)]
    #expect(set.count == 3)
    #expect(JSONValue.int(3).hashValue == JSONValue.double(3).hashValue)
    #expect(JSONValue.array([.int(1)]).hashValue == JSONValue.array([.double(1)]).hashValue)
  }

  @Test func objectEqualityIgnoresOrder() throws {
    let a = try JSONParser.parse(#"{"x":1,"y":[2,{"z":3}]}"#)
    let b = try JSONParser.parse(#"{"y":[2,{"z":3.0}],"x":1.0}"#)
    #expect(a == b)
    #expect(a.hashValue == b.hashValue)
    #expect(a != (try JSONParser.parse(#"{"x":1}"#)))
    #expect(a != (try JSONParser.parse(#"{"x":1,"w":[2,{"z":3}]}"#)))
    // Array order does matter.
    #expect(JSONValue.array([1, 2]) != .array([2, 1]))
  }

  @Test func accessors() {
    let value: JSONValue = ["s": "x", "b": true, "i": 4, "d": 2.0, "f": 2.5, "a": [1], "o": ["k": nil], "n": nil]
    #expect(value["s"]?.stringValue == "x")
    #expect(value["b"]?.boolValue == true)
    #expect(value["i"]?.intValue == 4)
    #expect(value["d"]?.intValue == 2)
    #expect(value["f"]?.intValue == nil)
    #expect(value["i"]?.doubleValue == 4.0)
    #expect(value["f"]?.doubleValue == 2.5)
    #expect(value["a"]?.arrayValue == [1])
    #expect(value["o"]?.objectValue?["k"] == .null)
    #expect(value["n"]?.isNull == true)
    #expect(value["missing"] == nil)
    #expect(value["s"]?["x"] == nil)
    #expect(value["s"]?.intValue == nil)
    #expect(value["i"]?.stringValue == nil)
    #expect(value["a"]?[0] == 1)
    #expect(value["a"]?[1] == nil)
    #expect(JSONValue.double(1e300).intValue == nil)
    #expect(value.typeName == "object")
    #expect(JSONValue.double(1).typeName == "number")
  }

  @Test func literals() {
    let value: JSONValue = ["a": [1, 2.5, "s", true, nil]]
    #expect(value == .object(["a": .array([.int(1), .double(2.5), .string("s"), .bool(true), .null])]))
  }

  @Test func objectSubscriptSetAndRemove() {
    var object: JSONObject = ["a": 1, "b": 2]
    object["c"] = 3
    object["a"] = "one"
    #expect(object.keys == ["a", "b", "c"])
    #expect(object["a"] == "one")
    object["b"] = nil
    #expect(object.keys == ["a", "c"])
    #expect(object.count == 2)
    #expect(object.removeValue(forKey: "a") == "one")
    #expect(object.removeValue(forKey: "zzz") == nil)
    #expect(object.keys == ["c"])
    object["c"] = nil
    #expect(object.isEmpty)
    object["missing"] = nil
    #expect(object.isEmpty)
  }

  @Test func objectIsASequenceInInsertionOrder() {
    let object = JSONObject([("z", 1), ("a", 2), ("z", 3)].map { (key: $0.0, value: JSONValue.int($0.1)) })
    #expect(object.map(\.key) == ["z", "a"])
    #expect(object.map(\.value) == [3, 2])
    #expect(object.values == [3, 2])
    #expect(object.contains(key: "a"))
    #expect(!object.contains(key: "b"))
    #expect(object.index(forKey: "a") == 1)
  }
}
