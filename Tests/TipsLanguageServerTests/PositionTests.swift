import Testing
import TipsJSON

@testable import TipsLanguageServer

/// LSP positions are UTF-16 code units by default: Japanese is one unit per character, an emoji outside the BMP two
/// (a surrogate pair); UTF-8 takes 3 and 4 bytes for them. CRLF is one line break.
@Suite struct PositionTests {
  // "a日😀b": a (1 byte, 1 unit), 日 (3 bytes, 1 unit), 😀 (4 bytes, 2 units), b.
  let line = "a日😀b"

  @Test func utf16UnitsForJapaneseAndEmoji() {
    let document = TextDocument(uri: "untitled:1", version: 1, text: line)
    let offsets = [0, 1, 4, 8, 9]  // byte offsets of a, 日, 😀, b, end
    let utf16 = [0, 1, 2, 4, 5]
    for (offset, character) in zip(offsets, utf16) {
      #expect(document.position(ofOffset: offset, encoding: .utf16) == LSPPosition(line: 0, character: character))
      #expect(document.offset(of: LSPPosition(line: 0, character: character), encoding: .utf16) == offset)
    }
    // Between the two halves of the surrogate pair: the emoji's start.
    #expect(document.offset(of: LSPPosition(line: 0, character: 3), encoding: .utf16) == 4)
    // Past the line's end: its end.
    #expect(document.offset(of: LSPPosition(line: 0, character: 99), encoding: .utf16) == 9)
    // An offset inside a scalar reads as its start.
    #expect(document.position(ofOffset: 6, encoding: .utf16) == LSPPosition(line: 0, character: 2))
  }

  @Test func utf8AndUTF32Encodings() {
    let document = TextDocument(uri: "untitled:1", version: 1, text: line)
    #expect(document.position(ofOffset: 8, encoding: .utf8) == LSPPosition(line: 0, character: 8))
    #expect(document.position(ofOffset: 8, encoding: .utf32) == LSPPosition(line: 0, character: 3))
    #expect(document.offset(of: LSPPosition(line: 0, character: 3), encoding: .utf32) == 8)
    #expect(document.offset(of: LSPPosition(line: 0, character: 2), encoding: .utf8) == 1)  // inside 日: its start
  }

  @Test func crlfIsOneLineBreak() {
    let document = TextDocument(uri: "untitled:1", version: 1, text: "{\r\n  \"日\": 1,\r\n\"😀\": 2\r\n}")
    #expect(document.lineStarts == [0, 3, 16, 27])
    #expect(document.position(ofOffset: 3, encoding: .utf16) == LSPPosition(line: 1, character: 0))
    // The \r and the \n of a line break belong to the line's end.
    #expect(document.position(ofOffset: 1, encoding: .utf16) == LSPPosition(line: 0, character: 1))
    #expect(document.position(ofOffset: 2, encoding: .utf16) == LSPPosition(line: 0, character: 1))
    #expect(document.offset(of: LSPPosition(line: 0, character: 5), encoding: .utf16) == 1)
    // Line 2 is `"😀": 2`: the value 2 sits at UTF-16 character 6.
    let two = Array(document.bytes).lastIndex(of: UInt8(ascii: "2"))!
    #expect(document.position(ofOffset: two, encoding: .utf16) == LSPPosition(line: 2, character: 6))
    #expect(document.offset(of: LSPPosition(line: 2, character: 6), encoding: .utf16) == two)
    // A line past the last: the end of the document.
    #expect(document.offset(of: LSPPosition(line: 9, character: 0), encoding: .utf16) == document.bytes.count)
  }

  @Test func loneCarriageReturnEndsALine() {
    let document = TextDocument(uri: "untitled:1", version: 1, text: "a\rb\nc")
    #expect(document.lineStarts == [0, 2, 4])
    #expect(document.position(ofOffset: 2, encoding: .utf16) == LSPPosition(line: 1, character: 0))
  }

  @Test func lintLinesAndScalarColumnsMapToOffsets() {
    // The lint counts lines at LF only and columns in scalars (1-based); `"😀": 2` puts the 2 at scalar column 6.
    let document = TextDocument(uri: "untitled:1", version: 1, text: "{\r\n  \"日\": 1,\r\n\"😀\": 2\r\n}")
    let two = Array(document.bytes).lastIndex(of: UInt8(ascii: "2"))!
    #expect(document.offset(lintLine: 3, column: 6) == two)
    #expect(document.offset(lintLine: 2, column: 3) == 5)  // the opening quote of "日"
    #expect(document.offset(lintLine: 1, column: 1) == 0)
    #expect(document.offset(lintLine: 9, column: 1) == document.bytes.count)
  }

  @Test func incrementalEditsInUTF16() {
    var document = TextDocument(uri: "untitled:1", version: 1, text: "\"😀 serach\"\r\n\"日本\"")
    // Replace "serach" (UTF-16 characters 4..<10 on line 0: quote, two units of emoji, space).
    document.replace(
      LSPRange(start: LSPPosition(line: 0, character: 4), end: LSPPosition(line: 0, character: 10)),
      with: Array("search".utf8), encoding: .utf16)
    #expect(document.text == "\"😀 search\"\r\n\"日本\"")
    // Insert after 日 on line 1.
    document.replace(
      LSPRange(start: LSPPosition(line: 1, character: 2), end: LSPPosition(line: 1, character: 2)),
      with: Array("の".utf8), encoding: .utf16)
    #expect(document.text == "\"😀 search\"\r\n\"日の本\"")
    // Join the lines: delete the CRLF.
    document.replace(
      LSPRange(start: LSPPosition(line: 0, character: 11), end: LSPPosition(line: 1, character: 0)),
      with: [], encoding: .utf16)
    #expect(document.text == "\"😀 search\"\"日の本\"")
    #expect(document.lineStarts == [0])
  }

  @Test func fileURIs() {
    #expect(FileURI.path("file:///tmp/a%20b/%E6%97%A5.json") == "/tmp/a b/日.json")
    #expect(FileURI.path("file://localhost/tmp/x.json") == "/tmp/x.json")
    #expect(FileURI.path("untitled:Untitled-1") == nil)
    #expect(FileURI.uri("/tmp/a b/日.json") == "file:///tmp/a%20b/%E6%97%A5.json")
  }
}

@Suite struct SyntaxTreeTests {
  @Test func valuesAndKeysHaveRangesAndPaths() throws {
    let text = #"{"tips": [{"id": "a.tip", "rules": [{"event": "x.y", "count": {"gte": 3}}]}]}"#
    let tree = SyntaxTree(Array(text.utf8))
    let event = try #require(tree.nodes.firstIndex { $0.text == "x.y" })
    #expect(tree.path(of: event).jsonPath == "tips[0].rules[0].event")
    #expect(tree[event].start == Array(text.utf8).firstIndex(of: UInt8(ascii: "x"))! - 1)
    #expect(tree[event].end == tree[event].start + 5)
    let three = try #require(tree.nodes.firstIndex { $0.kind == .number })
    #expect(tree.path(of: three).jsonPath == "tips[0].rules[0].count.gte")
    #expect(tree.json(tree.root!) == (try? TipsJSONParse.parse(text)))
  }

  @Test func toleratesWhatIsBeingTyped() throws {
    // An unterminated string ends at its line's end; a missing comma and an unclosed object are stepped over.
    let text =
      "{\"tips\": [{\"id\": \"a.tip\", \"rules\": [{\"event\": \"sea\n  \"count\": {\"gte\": 1}}\n  {\"event\": "
    let tree = SyntaxTree(Array(text.utf8))
    let sea = try #require(tree.nodes.firstIndex { $0.text == "sea" })
    #expect(!tree[sea].closed)
    #expect(tree.path(of: sea).jsonPath == "tips[0].rules[0].event")
    let count = try #require(tree.nodes.firstIndex { $0.isKey && $0.text == "count" })
    #expect(tree.path(of: count).jsonPath == "tips[0].rules[0].count")
    let second = try #require(tree.nodes.lastIndex { $0.isKey && $0.text == "event" })
    #expect(tree.path(of: second).jsonPath == "tips[0].rules[1].event")
    #expect(tree.valueOfKey(second) == nil)
  }

  @Test func deepNestingStops() {
    let text = String(repeating: "[", count: 10_000)
    let tree = SyntaxTree(Array(text.utf8))
    #expect(tree.nodes.count <= SyntaxTree.maximumDepth + 1)
  }
}

enum TipsJSONParse {
  static func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }
}
