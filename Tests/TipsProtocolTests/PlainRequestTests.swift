import Testing
import TipsJSON
import TipsProtocol
import TipsTestSupport

/// A message as text, order-sensitive in `params` (`IncomingMessage`'s own equality ignores member order, which the
/// unknown-param error's wording and positional mapping do not).
private func fingerprint(_ payload: IncomingPayload) -> String {
  func message(_ message: IncomingMessage) -> String {
    switch message {
    case .request(let id, let method, let params):
      return "request \(id.map(\.description) ?? "null") \(method) \(params?.jsonString ?? "-")"
    case .notification(let method, let params):
      return "notification \(method) \(params?.jsonString ?? "-")"
    case .response(let id, let result):
      return "response \(id.map(\.description) ?? "null") \(result)"
    case .invalid(let id, let error):
      return "invalid \(id.map(\.description) ?? "null") \(OutgoingMessage.encodeError(id: id, error: error))"
    }
  }
  switch payload {
  case .single(let single): return message(single)
  case .batch(let batch): return "batch " + batch.map(message).joined(separator: " | ")
  case .emptyBatch: return "empty batch"
  }
}

/// What the plain path reads from `bytes` (nil: it leaves them to the parser).
private func scanned(_ bytes: [UInt8]) -> IncomingMessage? {
  bytes.withUnsafeBytes { PlainRequest.scan($0) }
}

/// The fast path's contract on one input: whatever it reads equals the full parser's message, and decoding (which
/// tries it first) gives exactly what the full parser gives, errors included.
private func checkAgreement(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
  let full = IncomingPayload.decodeParsingFully(bytes)
  if let fast = scanned(bytes) {
    #expect(
      fingerprint(.single(fast)) == fingerprint(full), "\(String(decoding: bytes, as: UTF8.self))",
      sourceLocation: sourceLocation)
  }
  #expect(
    fingerprint(IncomingPayload.decode(bytes)) == fingerprint(full), "\(String(decoding: bytes, as: UTF8.self))",
    sourceLocation: sourceLocation)
  bytes.withUnsafeBytes { buffer in
    #expect(fingerprint(IncomingPayload.decode(buffer)) == fingerprint(full), sourceLocation: sourceLocation)
  }
}

@Suite struct PlainRequestTests {
  /// The shapes the fast path reads: the hot requests as clients send them, members in any order, whitespace.
  @Test(arguments: [
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"search.opened"}}"#,
    #"{"jsonrpc":"2.0","id":"a-1","method":"events/donate","params":{"id":"trail.visited","info":{"region":"north","n":3,"ok":true,"x":null}}}"#,
    #"{"method":"events/donate","params":{"info":{"n":-7},"id":"e"},"id":42,"jsonrpc":"2.0"}"#,
    #"{"params":{"id":"e"},"jsonrpc":"2.0","method":"events/donate","id":-0}"#,
    #"  { "jsonrpc" : "2.0" , "id" : 7 , "method" : "tips/status" }  "#,
    "{\"jsonrpc\":\"2.0\",\r\n\t\"id\":null,\"method\":\"tips/status\",\"params\":null}",
    #"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
    #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#,
    #"{"jsonrpc":"2.0","id":999999999999999999,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":-999999999999999999,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e","info":{}}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"info":{"b":1,"a":2},"id":"e"}}"#,
  ])
  func plainShapesAreReadStraightFromTheBytes(_ text: String) throws {
    let bytes = Array(text.utf8)
    #expect(scanned(bytes) != nil, "the fast path read it")
    checkAgreement(bytes)
  }

  /// Everything else goes to the parser, which answers as before: escapes in the id, extra or repeated members,
  /// numbers the parser reads differently (fractions, exponents, 19 digits), batches, and every malformed input.
  @Test(arguments: [
    // Escapes and non-ASCII text.
    #"{"jsonrpc":"2.0","id":"a\"b","method":"events/donate","params":{"id":"e"}}"#,
    #"{"jsonrpc":"2.0","id":"\u0041","method":"events/donate","params":{"id":"e"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events\/donate","params":{"id":"e"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"café"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"i\u0064":"e"}}"#,
    // Extra, repeated and missing members.
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e"},"extra":true}"#,
    #"{"jsonrpc":"2.0","id":1,"id":2,"method":"events/donate","params":{"id":"e"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"a","method":"events/donate","params":{"id":"e"}}"#,
    #"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"events/donate"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e"},"params":{"id":"f"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e","id":"f"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e","info":{"k":1,"k":2}}}"#,
    #"{"jsonrpc":"2.0","id":1,"result":{"count":1}}"#,
    #"{"jsonrpc":"2.0","id":1}"#,
    #"{"id":1,"method":"events/donate"}"#,
    #"{}"#,
    // Ids and versions the parser decides.
    #"{"jsonrpc":"2.0","id":1.0,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":1.5,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":1e2,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":1E2,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":9223372036854775807,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":9223372036854775808,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":01,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":-,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":true,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":{},"method":"clock/now"}"#,
    #"{"jsonrpc":"2.00","id":1,"method":"clock/now"}"#,
    #"{"jsonrpc":2.0,"id":1,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":7}"#,
    // Params the parser decides.
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":["e",{"k":1}]}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":"e"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e","info":{"n":2.5}}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e","info":{"deep":{"er":1}}}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e","info":{"list":[1]}}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e","n":1e400}}"#,
    // Batches.
    #"[{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e"}}]"#,
    #"[{"jsonrpc":"2.0","id":1,"method":"clock/now"},{"jsonrpc":"2.0","method":"x"},1]"#,
    #"[]"#,
    // Malformed.
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e"}}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e"}} x"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e",}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate",}"#,
    #"{"jsonrpc":"2.0" "id":1,"method":"events/donate"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"e"}}nul"#,
    #"{"jsonrpc":"2.0","id":nul,"method":"clock/now"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":tru}}"#,
    "{\"jsonrpc\":\"2.0\",\"id\":\"a\tb\",\"method\":\"clock/now\"}",
    "",
    "not json",
  ])
  func unusualShapesGoToTheParser(_ text: String) throws {
    let bytes = Array(text.utf8)
    #expect(scanned(bytes) == nil, "left to the parser")
    checkAgreement(bytes)
  }

  /// Invalid UTF-8 and control bytes anywhere are the parser's to report.
  @Test func invalidBytesGoToTheParser() {
    let base = Array(#"{"jsonrpc":"2.0","id":"x","method":"events/donate","params":{"id":"e"}}"#.utf8)
    for byte: UInt8 in [0x00, 0x01, 0x1F, 0x7F, 0x80, 0xC0, 0xFF] {
      for position in [24, 28, 59] {
        var bytes = base
        bytes.insert(byte, at: position)
        checkAgreement(bytes)
      }
    }
  }

  /// Random edits of plain requests (bytes replaced, inserted, deleted, the end cut): wherever the fast path reads
  /// the result, it reads what the parser does, and decoding always answers as the parser does. (A few thousand
  /// here, cheap enough for a debug build beside the suites that run in parallel; the `jsonrpc` fuzz target checks
  /// millions.)
  @Test func randomEditsAgreeWithTheParser() {
    let bases = [
      #"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"search.opened"}}"#,
      #"{"jsonrpc":"2.0","id":"r7","method":"events/donate","params":{"id":"t","info":{"region":"north","n":3}}}"#,
      #"{"method":"tips/status","jsonrpc":"2.0","id":null,"params":null}"#,
    ].map { Array($0.utf8) }
    let alphabet = Array(#"{}[]:,"\ 0123456789-+.eEtrufalsn"#.utf8) + [0x09, 0x0A, 0x00, 0x80, 0xC3, 0xA9]
    var random = SplitMix64(seed: 15)
    var readByTheFastPath = 0
    for round in 0..<3_000 {
      var bytes = bases[round % bases.count]
      for _ in 0...random.next(below: 3) {
        let position = random.next(below: bytes.count + 1)
        switch random.next(below: 4) {
        case 0 where position < bytes.count: bytes[position] = alphabet[random.next(below: alphabet.count)]
        case 1: bytes.insert(alphabet[random.next(below: alphabet.count)], at: position)
        case 2 where position < bytes.count: bytes.remove(at: position)
        default: bytes.removeLast(min(bytes.count, random.next(below: 4)))
        }
      }
      if scanned(bytes) != nil { readByTheFastPath += 1 }
      checkAgreement(bytes)
    }
    // Some edits keep the plain shape (a digit of the id, whitespace), so both paths were exercised.
    #expect(readByTheFastPath > 20)
  }
}
