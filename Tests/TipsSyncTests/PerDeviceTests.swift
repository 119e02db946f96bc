import Testing

@testable import TipsSync

/// ``PerDevice`` reads and writes as the dictionary it replaced, whichever way it holds its values.
@Suite struct PerDeviceTests {
  @Test func oneDeviceThenTwoThenOneAgain() {
    var counts: PerDevice<Int> = [:]
    #expect(counts.isEmpty && counts["a"] == nil && counts.count == 0)
    counts["a"] = 1
    counts["a"] = 2
    #expect(counts["a"] == 2 && counts["b"] == nil && counts.count == 1)
    counts["b"] = 5
    #expect(counts["a"] == 2 && counts["b"] == 5 && counts.count == 2)
    #expect(counts.keys.sorted() == ["a", "b"] && counts.values.reduce(0, +) == 7)
    #expect(counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } == ["a=2", "b=5"])
    counts["a"] = nil
    #expect(counts["a"] == nil && counts["b"] == 5 && counts.count == 1)
    counts["c"] = nil  // removing what is not there changes nothing
    #expect(counts.count == 1)
    counts["b"] = nil
    #expect(counts.isEmpty && Array(counts).isEmpty)
  }

  @Test func equalWhateverTheOrderOrHolding() {
    var first: PerDevice<Int> = ["a": 1, "b": 2]
    let second: PerDevice<Int> = ["b": 2, "a": 1]
    #expect(first == second)
    first["b"] = nil
    #expect(first != second && first == ["a": 1])
    var grown: PerDevice<Int> = ["a": 1, "b": 2, "c": 3]
    grown["b"] = nil
    grown["c"] = nil
    #expect(grown == first)  // back to one device from many
    var inDictionary: [String: PerDevice<Int>] = [:]
    inDictionary["e", default: [:]]["a"] = 3
    inDictionary["e"]?["b"] = 4
    #expect(inDictionary["e"] == ["a": 3, "b": 4])
  }
}
