import Testing
import TipsJSON
import TipsTestSupport

@testable import TipsLanguageServer

/// What an editor sends while someone types: random incremental edits (quotes, braces, Japanese, emoji, line
/// breaks; positions past line ends and inside surrogate pairs), each followed by every request at random
/// positions. Nothing may trap, and every request is answered.
@Suite struct EditingTests {
  @Test func randomEditsNeverTrap() {
    var random = SplitMix64(seed: 16)
    let client = Client()
    client.open(uri, catalogText)
    let pieces = [
      "\"", "{", "}", "[", "]", ",", ":", " ", "\r\n", "\n", "\r", "日本", "😀", "\"event\": ", "\\", "\\u00e9", "1",
      "\"rules\": [", "{\"event\": \"serach.opened\", \"count\": {\"gte\": 2}}", "\"tips\"",
    ]
    var text = catalogText
    for version in 2...250 {
      let lines = max(
        1, text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).count)
      func randomPosition() -> JSONValue {
        [
          "line": .int(Int64(Int.random(in: 0...lines, using: &random))),
          "character": .int(Int64(Int.random(in: 0...120, using: &random))),
        ]
      }
      // Mostly a few characters on one line, as typing does; now and then a span of lines.
      var start = randomPosition()
      var end: JSONValue = [
        "line": start["line"]!,
        "character": .int(start["character"]!.intValue! + Int64.random(in: 0...3, using: &random)),
      ]
      if Int.random(in: 0..<20, using: &random) == 0 { end = randomPosition() }
      if let a = start["line"]?.intValue, let b = end["line"]?.intValue, b < a { swap(&start, &end) }
      let insert = (0..<Int.random(in: 0...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }
        .joined()
      client.change(uri, version: Int64(version), [["range": ["start": start, "end": end], "text": .string(insert)]])
      #expect(client.diagnostics[uri] != nil)
      let at: JSONValue = ["textDocument": ["uri": .string(uri)], "position": randomPosition()]
      for method in ["textDocument/completion", "textDocument/hover", "textDocument/definition"] {
        #expect(client.call(method, at)["error"] == nil)
      }
      let actions = client.call(
        "textDocument/codeAction",
        [
          "textDocument": ["uri": .string(uri)], "range": ["start": randomPosition(), "end": randomPosition()],
          "context": ["diagnostics": []],
        ])
      #expect(actions["error"] == nil)
      text = client.server.documents[uri]!.text.text
    }
  }
}
