import Testing
import TipsFraming

/// Feeds `chunks` one after another, draining events after each.
func events(_ chunks: [String], maxMessageSize: Int = 1 << 20) -> [FramerEvent] {
  var framer = Framer(maxMessageSize: maxMessageSize)
  return drain(&framer, chunks.map { Array($0.utf8) })
}

/// Feeds byte chunks into `framer`, collecting every event.
func drain(_ framer: inout Framer, _ chunks: [[UInt8]]) -> [FramerEvent] {
  var collected: [FramerEvent] = []
  for chunk in chunks {
    chunk.withUnsafeBytes { framer.feed($0) }
    while let event = framer.next() { collected.append(event) }
  }
  return collected
}

/// A `.message` event with the UTF-8 of `text`.
func message(_ text: String) -> FramerEvent {
  .message(Array(text.utf8))
}

/// `text` split into one-byte chunks.
func bytewise(_ text: String) -> [String] {
  text.utf8.map { String(decoding: [$0], as: UTF8.self) }
}

@Suite struct DetectionTests {
  @Test func nothingIsDetectedBeforeTheFirstByte() {
    var framer = Framer()
    #expect(framer.framing == nil)
    #expect(framer.next() == nil)
    framer.feed(Array(" \r\n\t".utf8))
    #expect(framer.next() == nil)
    #expect(framer.framing == nil)
    #expect(!framer.hasPartialMessage)
  }

  @Test(arguments: ["{", "["])
  func braceOrBracketSelectsNewline(first: String) {
    var framer = Framer()
    framer.feed(Array("  \n\(first)".utf8))
    #expect(framer.next() == nil)
    #expect(framer.framing == .newline)
  }

  @Test(arguments: ["C", "c"])
  func letterCSelectsContentLength(first: String) {
    var framer = Framer()
    framer.feed(Array("\r\n\(first)".utf8))
    #expect(framer.next() == nil)
    #expect(framer.framing == .contentLength)
  }

  @Test(arguments: ["x", "1", "\"", "G", "\u{0}"])
  func anythingElseIsAnError(first: String) {
    let byte = Array(first.utf8)[0]
    #expect(events(["  " + first + "{}\n"]) == [.error(.unrecognizedFraming(firstByte: byte))])
  }

  @Test func errorsAreTerminal() {
    var framer = Framer()
    #expect(drain(&framer, [Array("x\n".utf8)]) == [.error(.unrecognizedFraming(firstByte: UInt8(ascii: "x")))])
    #expect(framer.failure == .unrecognizedFraming(firstByte: UInt8(ascii: "x")))
    #expect(drain(&framer, [Array("{}\n".utf8)]) == [])
    #expect(framer.bufferedByteCount == 0)
    #expect(!framer.hasPartialMessage)
  }
}

@Suite struct NewlineFramingTests {
  @Test func singleMessage() {
    #expect(events(["{\"a\":1}\n"]) == [message("{\"a\":1}")])
  }

  @Test func oneByteAtATime() {
    let input = "{\"a\":1}\r\n\n  \n[1,2]\n{}\n"
    #expect(events(bytewise(input)) == [message("{\"a\":1}"), message("[1,2]"), message("{}")])
  }

  @Test func trailingCarriageReturnIsStripped() {
    #expect(events(["{}\r\n", "[]\r\n"]) == [message("{}"), message("[]")])
  }

  @Test func blankAndWhitespaceOnlyLinesAreSkipped() {
    #expect(events(["{}\n\n \t \r\n\r\n[]\n"]) == [message("{}"), message("[]")])
  }

  @Test func linesAfterTheFirstMayStartWithAnything() {
    #expect(events(["{}\nnot json\n"]) == [message("{}"), message("not json")])
  }

  @Test func manyMessagesInOneChunk() {
    let count = 1000
    let input = (0..<count).map { "{\"id\":\($0)}\n" }.joined()
    let got = events([input])
    #expect(got.count == count)
    #expect(got.first == message("{\"id\":0}"))
    #expect(got.last == message("{\"id\":999}"))
  }

  @Test func messageSplitAcrossChunksAndPartialState() {
    var framer = Framer()
    #expect(drain(&framer, [Array("{\"a\":".utf8)]) == [])
    #expect(framer.hasPartialMessage)
    #expect(framer.bufferedByteCount == 5)
    #expect(drain(&framer, [Array("1}\n{\"b\"".utf8)]) == [message("{\"a\":1}")])
    #expect(framer.hasPartialMessage)
    #expect(drain(&framer, [Array(":2}\n".utf8)]) == [message("{\"b\":2}")])
    #expect(!framer.hasPartialMessage)
    #expect(framer.bufferedByteCount == 0)
  }

  @Test func messageOfExactlyTheLimitIsAccepted() {
    #expect(events(["{\"a\":1}\r\n"], maxMessageSize: 7) == [message("{\"a\":1}")])
    #expect(events(bytewise("{\"a\":1}\r\n"), maxMessageSize: 7) == [message("{\"a\":1}")])
  }

  @Test func overlongLineFailsAsSoonAsTheLimitIsCrossed() {
    var framer = Framer(maxMessageSize: 8)
    #expect(drain(&framer, [Array("{\"a\":12".utf8)]) == [])
    #expect(drain(&framer, [Array("34".utf8)]) == [.error(.messageTooLarge(limit: 8, size: nil))])
    // The rest of the line is not buffered.
    #expect(drain(&framer, [Array(String(repeating: "5", count: 10_000).utf8)]) == [])
    #expect(framer.bufferedByteCount == 0)
  }

  @Test func overlongCompleteLineReportsItsSize() {
    #expect(events(["{\"a\":1234}\n"], maxMessageSize: 8) == [.error(.messageTooLarge(limit: 8, size: 10))])
  }

  @Test func messagesBeforeAnOverlongLineStillComeOut() {
    #expect(
      events(["{}\n{\"long\":\"xxxxxxxxxxxxxxxxxxxx\"}\n{}\n"], maxMessageSize: 10)
        == [message("{}"), .error(.messageTooLarge(limit: 10, size: 31))])
  }

  @Test func tinyChunksAreScannedLinearly() {
    // 2 MB arriving 64 bytes at a time; quadratic rescanning would take minutes.
    var framer = Framer(maxMessageSize: 4 << 20)
    let line = "{\"data\":\"" + String(repeating: "x", count: 2_000_000) + "\"}\n"
    let bytes = Array(line.utf8)
    var got: [FramerEvent] = []
    var offset = 0
    while offset < bytes.count {
      let end = min(offset + 64, bytes.count)
      bytes[offset..<end].withUnsafeBytes { framer.feed($0) }
      while let event = framer.next() { got.append(event) }
      offset = end
    }
    #expect(got == [.message(Array(bytes.dropLast()))])
  }
}

@Suite struct ContentLengthFramingTests {
  @Test func singleMessage() {
    #expect(events(["Content-Length: 7\r\n\r\n{\"a\":1}"]) == [message("{\"a\":1}")])
  }

  @Test func oneByteAtATime() {
    let input = "Content-Length: 2\r\n\r\n{}Content-Length: 5\r\nContent-Type: application/json\r\n\r\n[1,2]"
    #expect(events(bytewise(input)) == [message("{}"), message("[1,2]")])
  }

  @Test func headerSplitInsideTheName() {
    #expect(events(["Content", "-Length: 2\r", "\n\r", "\n{", "}"]) == [message("{}")])
  }

  @Test func headerNamesAreCaseInsensitiveAndOtherHeadersIgnored() {
    let input = "content-type: application/vscode-jsonrpc; charset=utf-8\r\nCONTENT-LENGTH:2\r\nX-Other: 1\r\n\r\n{}"
    #expect(events([input]) == [message("{}")])
  }

  @Test func bodyMayContainNewlinesAndHeaderLikeText() {
    let body = "{\"a\":\n\"Content-Length: 99\\r\\n\"}"
    #expect(events(["Content-Length: \(body.utf8.count)\r\n\r\n" + body]) == [message(body)])
  }

  @Test func bareNewlinesAndBlankLinesBetweenMessagesAreTolerated() {
    #expect(events(["Content-Length: 2\n\n{}\r\n\r\nContent-Length: 2\r\n\r\n[]"]) == [message("{}"), message("[]")])
  }

  @Test func zeroLengthMessage() {
    #expect(events(["Content-Length: 0\r\n\r\nContent-Length: 2\r\n\r\n{}"]) == [message(""), message("{}")])
  }

  @Test func manyMessagesInOneChunk() {
    let input = (0..<500).map { i -> String in
      let body = "{\"id\":\(i)}"
      return "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }.joined()
    let got = events([input])
    #expect(got.count == 500)
    #expect(got[499] == message("{\"id\":499}"))
  }

  @Test func partialStateDuringHeadersAndBody() {
    var framer = Framer()
    #expect(drain(&framer, [Array("Content-Length: 4\r\n".utf8)]) == [])
    #expect(framer.hasPartialMessage)
    #expect(framer.bufferedByteCount == 0)
    #expect(drain(&framer, [Array("\r\n[1".utf8)]) == [])
    #expect(framer.hasPartialMessage)
    #expect(framer.bufferedByteCount == 2)
    #expect(drain(&framer, [Array("2]".utf8)]) == [message("[12]")])
    #expect(!framer.hasPartialMessage)
  }

  @Test(arguments: [
    ("Content-Type: x\r\n\r\n{}", FramingError.missingContentLength),
    ("Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", .duplicateContentLength),
    ("Content-Length: 2\r\ncontent-length: 3\r\n\r\n{}", .duplicateContentLength),
    ("Content-Length: -1\r\n\r\n", .invalidContentLength("-1")),
    ("Content-Length: abc\r\n\r\n", .invalidContentLength("abc")),
    ("Content-Length: 1 2\r\n\r\n", .invalidContentLength("1 2")),
    ("Content-Length: +5\r\n\r\n", .invalidContentLength("+5")),
    ("Content-Length: \r\n\r\n", .invalidContentLength("")),
    ("Content-Length 2\r\n\r\n{}", .invalidHeader("Content-Length 2")),
    ("Content-Length: 2\r\n: x\r\n\r\n{}", .invalidHeader(": x")),
    ("Content-Length: 11\r\n\r\n", .messageTooLarge(limit: 10, size: 11)),
    ("Content-Length: 99999999999999999999999\r\n\r\n", .messageTooLarge(limit: 10, size: nil)),
  ])
  func headerErrors(input: String, error: FramingError) {
    #expect(events([input], maxMessageSize: 10) == [.error(error)])
    #expect(events(bytewise(input), maxMessageSize: 10) == [.error(error)])
  }

  @Test func tooLargeIsReportedBeforeTheBodyArrives() {
    var framer = Framer(maxMessageSize: 100)
    // No blank line yet, no body: the header alone is enough.
    #expect(
      drain(&framer, [Array("Content-Length: 5000000\r\n".utf8)]) == [
        .error(.messageTooLarge(limit: 100, size: 5_000_000))
      ])
  }

  @Test func headerSectionIsBounded() {
    let filler = "X-Filler: " + String(repeating: "a", count: 100) + "\r\n"
    let input = "Content-Length: 2\r\n" + String(repeating: filler, count: 100)
    #expect(events([input]) == [.error(.headerTooLarge(limit: Framer.maxHeaderSize))])
    // An unterminated giant header line is caught too.
    #expect(
      events(["C" + String(repeating: "x", count: 9000)]) == [.error(.headerTooLarge(limit: Framer.maxHeaderSize))])
  }

  @Test func messagesBeforeAnErrorStillComeOut() {
    #expect(
      events(["Content-Length: 2\r\n\r\n{}Content-Length: x\r\n\r\n"]) == [
        message("{}"), .error(.invalidContentLength("x")),
      ])
  }
}

@Suite struct EncodingTests {
  @Test func newline() {
    #expect(Framer.encode(Array("{}".utf8), as: .newline) == Array("{}\n".utf8))
  }

  @Test func contentLength() {
    #expect(
      Framer.encode(Array("{\"é\":1}".utf8), as: .contentLength) == Array("Content-Length: 8\r\n\r\n{\"é\":1}".utf8))
  }

  @Test(arguments: [Framing.newline, .contentLength])
  func encodedMessagesFrameBack(framing: Framing) {
    let payloads = ["{\"a\":1}", "[1,2,3]", "{\"s\":\"x\\ny\"}"].map { Array($0.utf8) }
    let stream = payloads.flatMap { Framer.encode($0, as: framing) }
    var framer = Framer()
    #expect(drain(&framer, [stream]) == payloads.map(FramerEvent.message))
    #expect(framer.framing == framing)
  }

  @Test(arguments: [Framing.newline, .contentLength])
  func appendGathersWhatEncodeFrames(framing: Framing) {
    let payloads = ["{\"a\":1}", "[1,2,3]", "{\"é\":\"x\\ny\"}"].map { Array($0.utf8) }
    var gathered: [UInt8] = []
    for payload in payloads { Framer.append(payload, as: framing, to: &gathered) }
    #expect(gathered == payloads.flatMap { Framer.encode($0, as: framing) })
  }

  @Test func errorDescriptions() {
    #expect(FramingError.unrecognizedFraming(firstByte: 0x78).description.contains("0x78"))
    #expect(
      FramingError.messageTooLarge(limit: 10, size: 20).description
        == "message of 20 bytes exceeds the limit of 10 bytes")
    #expect(FramingError.messageTooLarge(limit: 10, size: nil).description == "message exceeds the limit of 10 bytes")
    #expect(FramingError.missingContentLength.description == "missing Content-Length header")
    #expect(FramingError.invalidContentLength("x").description.contains("\"x\""))
    #expect(FramingError.headerTooLarge(limit: 8192).description == "header section exceeds 8192 bytes")
  }
}
