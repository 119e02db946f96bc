import Testing
import TipsJSON
import TipsProtocol
import TipsTranscript

@testable import TipsCommands

/// `tipsd test` (issue #16): each kind of failure with its exact message and line, partial matching, several
/// clients, `== advance`.
@Suite struct TranscriptCommandTests {
  static let header = """
    --> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"\(ProtocolVersion.current)","clientInfo":{"name":"t"}}}
    <-- {"jsonrpc":"2.0","id":1,"result":"$object"}
    --> {"jsonrpc":"2.0","id":2,"method":"tips/register","params":{"tips":[{"id":"a.tip","title":"A","rules":[{"event":"e","count":{"gte":1}}]}]}}
    <-- {"jsonrpc":"2.0","id":2,"result":"$object"}

    """

  func run(_ text: String, partial: Bool = false) throws -> TranscriptResult {
    let transcript = try Transcript(text: text, path: "case.transcript")
    var runner = TranscriptRunner()
    runner.partialByDefault = partial
    return runner.run(transcript)
  }

  @Test func aPassingTranscript() throws {
    let result = try run(
      Self.header + """
        --> {"jsonrpc":"2.0","id":3,"method":"tips/observe","params":{"ids":["a.tip"]}}
        <-- {"jsonrpc":"2.0","id":3,"result":{"subscription":"$capture:sub","tips":"$array","groups":[]}}
        --> {"jsonrpc":"2.0","id":4,"method":"events/donate","params":{"id":"e"}}
        <-- {"jsonrpc":"2.0","method":"tips/shouldDisplayChanged","params":{"subscription":${sub},"seq":1,"id":"a.tip","shouldDisplay":true,"status":"available","tip":"$object"}}
        <-- {"jsonrpc":"2.0","id":4,"result":{"count":1,"lifetime":1}}
        <-- nothing
        """)
    #expect(result.status == .passed, "\(result.headline)")
    #expect(result.steps == 9)
  }

  @Test func aWrongExpectedValue() throws {
    let result = try run(
      Self.header + """
        --> {"jsonrpc":"2.0","id":3,"method":"events/donate","params":{"id":"e"}}
        <-- {"jsonrpc":"2.0","id":3,"result":{"count":2,"lifetime":1}}
        """)
    #expect(result.status == .failed)
    #expect(result.failure?.line == 6)
    #expect(result.failure?.message == "message does not match: line 6: /result/count: expected 2, got 1")
    #expect(result.failure?.diff.contains("-    \"count\": 2,") == true)
    #expect(result.failure?.diff.contains("+    \"count\": 1,") == true)
    #expect(result.headline == "case.transcript:6: message does not match: line 6: /result/count: expected 2, got 1")
  }

  @Test func aMissingNotification() throws {
    let result = try run(
      Self.header + """
        --> {"jsonrpc":"2.0","id":3,"method":"events/donate","params":{"id":"e"}}
        <-- {"jsonrpc":"2.0","method":"tips/shouldDisplayChanged","params":"$object"}
        <-- {"jsonrpc":"2.0","id":3,"result":{"count":1,"lifetime":1}}
        """)
    #expect(result.status == .failed)
    #expect(result.failure?.line == 6)
    #expect(
      result.failure?.message
        == #"expected 2 messages, got 1: {"jsonrpc":"2.0","id":3,"result":{"count":1,"lifetime":1}}"#)
  }

  @Test func anUnexpectedExtraNotification() throws {
    let result = try run(
      Self.header + """
        --> {"jsonrpc":"2.0","id":3,"method":"tips/observe","params":{"ids":["a.tip"]}}
        <-- {"jsonrpc":"2.0","id":3,"result":"$object"}
        --> {"jsonrpc":"2.0","id":4,"method":"events/donate","params":{"id":"e"}}
        <-- {"jsonrpc":"2.0","id":4,"result":{"count":1,"lifetime":1}}
        """)
    #expect(result.status == .failed)
    #expect(result.failure?.line == 8)
    #expect(
      result.failure?.message.hasPrefix(
        #"unexpected message before the block: {"jsonrpc":"2.0","method":"tips/shouldDisplayChanged""#) == true)
    // And one left over at the end is reported at the last line.
    let leftover = try run(
      Self.header + """
        --> {"jsonrpc":"2.0","id":3,"method":"tips/observe","params":{"ids":["a.tip"]}}
        <-- {"jsonrpc":"2.0","id":3,"result":"$object"}
        --> {"jsonrpc":"2.0","id":4,"method":"events/donate","params":{"id":"e"}}
        """)
    #expect(leftover.failure?.line == 7)
    #expect(leftover.failure?.message.hasPrefix("unexpected message after the last step: ") == true)
  }

  @Test func aCaptureUsedBeforeItIsSet() throws {
    let result = try run(
      Self.header + """
        --> {"jsonrpc":"2.0","id":3,"method":"tips/unobserve","params":{"subscription":${sub}}}
        <-- {"jsonrpc":"2.0","id":3,"result":"$object"}
        """)
    #expect(result.status == .error)
    #expect(result.failure?.line == 5)
    #expect(result.failure?.message == "${sub} used before it was captured")
  }

  @Test func aMalformedLine() throws {
    #expect {
      try Transcript(text: Self.header + "<- {\"id\":3}\n", path: "case.transcript")
    } throws: { error in
      let parse = error as? Transcript.ParseError
      return parse?.line == 5
        && parse?.description
          == "case.transcript:5: a line must start with -->, <--, == (optionally after a client name, e.g. inspector-->), # or #!"
    }
    #expect {
      try Transcript(text: "<-- {\"id\": }\n", path: "bad.transcript")
    } throws: { error in (error as? Transcript.ParseError)?.message.hasPrefix("<-- line is not JSON") == true }
    #expect {
      try Transcript(text: "#! matc: partial\n", path: "bad.transcript")
    } throws: { error in (error as? Transcript.ParseError)?.message.hasPrefix("unknown directive \"matc\"") == true }
  }

  @Test func partialMatchingSeveralClientsAndAdvance() throws {
    let text = """
      #! match: partial
      app--> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"\(ProtocolVersion.current)","clientInfo":{"name":"app"}}}
      app<-- {"id":1}
      app--> {"jsonrpc":"2.0","id":2,"method":"tips/register","params":{"tips":[{"id":"w.tip","title":"W","rules":[{"event":"e","within":{"hours":1},"count":{"gte":1}}]}]}}
      app<-- {"id":2,"result":{"tips":[{"shouldDisplay":false}]}}
      ui--> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"\(ProtocolVersion.current)","clientInfo":{"name":"ui"}}}
      ui<-- {"id":1}
      ui--> {"jsonrpc":"2.0","id":2,"method":"tips/observe","params":{"ids":["w.tip"]}}
      ui<-- {"id":2}
      app--> {"jsonrpc":"2.0","id":3,"method":"events/donate","params":{"id":"e"}}
      app<-- {"id":3,"result":{"count":1}}
      ui<-- {"method":"tips/shouldDisplayChanged","params":{"shouldDisplay":true}}
      == advance 1h
      ui<-- {"method":"tips/shouldDisplayChanged","params":{"shouldDisplay":false}}
      app<-- nothing
      """
    let result = try run(text)
    #expect(result.status == .passed, "\(result.headline)")
    // Without partial matching the same patterns are too short.
    let exact = try run(text.replacingFirst("#! match: partial\n", with: ""))
    #expect(exact.status == .failed)
    #expect(exact.failure?.line == 2)
    #expect(
      exact.failure?.message == "app: message does not match: line 2: /jsonrpc: unexpected member (value \"2.0\")")
  }

  @Test func junitCountsEachOutcome() throws {
    let pass = TranscriptResult(name: "pass", path: "p.transcript", status: .passed, seconds: 0.0012)
    let fail = TranscriptResult(
      name: "fail", path: "f.transcript", status: .failed,
      failure: .init(line: 3, message: "a <b> & \"c\"", diff: "-x\n+y\n"))
    let error = TranscriptResult(
      name: "err", path: "e.transcript", status: .error, failure: .init(line: 1, message: "bad"))
    let xml = JUnitReport.xml([pass, fail, error])
    #expect(xml.contains(#"<testsuites tests="3" failures="1" errors="1" skipped="0""#))
    #expect(xml.contains(#"<failure message="f.transcript:3: a &lt;b&gt; &amp; &quot;c&quot;" type="mismatch">-x"#))
    #expect(xml.contains(#"<testcase classname="tipsd test" name="pass" file="p.transcript" time="0.001"/>"#))
  }
}

extension String {
  fileprivate func replacingFirst(_ target: String, with replacement: String) -> String {
    guard let range = firstRange(of: target) else { return self }
    return self[..<range.lowerBound] + replacement + self[range.upperBound...]
  }
}
