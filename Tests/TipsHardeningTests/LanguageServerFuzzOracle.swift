import TipsFraming
import TipsJSON
import TipsLanguageServer

/// The `lsp` fuzz target's oracle (`tipsd lsp`), compiled into Fuzz/harness/LanguageServerHarness.swift by
/// Fuzz/build.sh and replayed over the committed seeds and regressions by `FuzzRegressions`. The input is what a
/// client writes to the server's stdin: framed as `LanguageServerRunner` frames it (Content-Length, or newlines), each
/// message handled in order and the diagnostics flushed after it, until `exit` or a framing error. Every request (an
/// object with a string `method` and an `id`) gets exactly one reply with its id and a result or an error — -32002
/// before `initialize`, -32600 after `shutdown` — and a notification gets none; anything else gets one error (-32700
/// for what is not JSON) or, for a reply to the server, nothing. Everything sent is JSON-RPC 2.0 that reads back the
/// same; published diagnostics have ordered, non-negative ranges; a second flush publishes nothing.
enum LanguageServerFuzzOracle {
  typealias Check = (_ holds: Bool, _ message: () -> String) -> Void

  static func check(_ input: [UInt8], _ check: Check) {
    let server = LanguageServer()
    var framer = Framer(maxMessageSize: 1 << 20)
    framer.feed(input)
    while let event = framer.next() {
      guard case .message(let bytes) = event else { return }
      let before = server.lifecycle
      let replies = server.handle(bytes: bytes)
      replies.forEach { wellFormed($0, check) }
      answered(bytes, before: before, replies: replies, check)
      if server.exitCode != nil { return }
      let published = server.flush()
      for message in published {
        wellFormed(message, check)
        diagnostics(message, check)
      }
      check(server.flush().isEmpty, { "a second flush published again" })
    }
  }

  /// The replies a message gets, by what it is.
  static func answered(_ bytes: [UInt8], before: LanguageServer.Lifecycle, replies: [JSONValue], _ check: Check) {
    let shown = String(decoding: bytes.prefix(200), as: UTF8.self)
    guard let message = try? JSONParser.parse(bytes) else {
      check(replies.count == 1 && code(replies[0]) == -32700, { "not JSON, not one parse error: \(shown)" })
      return
    }
    guard case .object(let object) = message else {
      check(replies.count == 1 && code(replies[0]) == -32600, { "not an object, not one invalid request: \(shown)" })
      return
    }
    guard let method = object["method"]?.stringValue else {
      if object["id"] != nil, object["result"] != nil || object["error"] != nil {
        check(replies.isEmpty, { "a reply to the server was answered: \(shown)" })
      } else {
        check(
          replies.count == 1 && code(replies[0]) == -32600 && replies[0]["id"] == (object["id"] ?? .null),
          { "no method, not one invalid request with its id: \(shown)" })
      }
      return
    }
    guard let id = object["id"] else {
      for reply in replies {
        check(reply["id"] == nil && reply["method"] != nil, { "a notification was answered: \(shown)" })
      }
      if method != "textDocument/didClose" { check(replies.isEmpty, { "a notification was answered: \(shown)" }) }
      return
    }
    guard replies.count == 1, let reply = replies.first else {
      check(false, { "\(replies.count) replies to one request: \(shown)" })
      return
    }
    check(reply["id"] == id, { "the reply's id is \(reply["id"]?.jsonString ?? "missing"), not \(id.jsonString)" })
    check((reply["result"] == nil) != (reply["error"] == nil), { "a reply needs a result or an error: \(shown)" })
    switch before {
    case .uninitialized:
      let expected: Int64? = method == "initialize" ? nil : -32002
      check(code(reply) == expected, { "before initialize, \(method) got \(reply.jsonString)" })
    case .shutDown:
      check(code(reply) == -32600, { "after shutdown, \(method) got \(reply.jsonString)" })
    case .running:
      if method == "initialize" { check(code(reply) == -32600, { "a second initialize got \(reply.jsonString)" }) }
    }
  }

  static func code(_ reply: JSONValue) -> Int64? {
    reply["error"]?["code"]?.intValue
  }

  /// JSON-RPC 2.0 as written, read back the same.
  static func wellFormed(_ message: JSONValue, _ check: Check) {
    let bytes = message.serialized()
    guard let reread = try? JSONParser.parse(bytes) else {
      check(false, { "the server wrote what is not JSON: \(String(decoding: bytes, as: UTF8.self))" })
      return
    }
    check(reread.serialized() == bytes, { "what the server wrote does not read back the same" })
    check(message["jsonrpc"] == "2.0", { "not JSON-RPC 2.0: \(message.jsonString)" })
    if let error = message["error"] {
      check(error["code"]?.intValue != nil && error["message"]?.stringValue != nil, { "an error \(error.jsonString)" })
    }
  }

  /// A publishDiagnostics notification: a URI, and diagnostics with ordered ranges and a known severity.
  static func diagnostics(_ message: JSONValue, _ check: Check) {
    check(message["method"] == "textDocument/publishDiagnostics", { "flush sent \(message.jsonString)" })
    check(message["params"]?["uri"]?.stringValue != nil, { "diagnostics without a uri" })
    for diagnostic in message["params"]?["diagnostics"]?.arrayValue ?? [] {
      func position(_ name: String) -> (Int64, Int64)? {
        guard let line = diagnostic["range"]?[name]?["line"]?.intValue,
          let character = diagnostic["range"]?[name]?["character"]?.intValue, line >= 0, character >= 0
        else { return nil }
        return (line, character)
      }
      guard let start = position("start"), let end = position("end") else {
        check(false, { "a diagnostic's range: \(diagnostic.jsonString)" })
        continue
      }
      check(start <= end, { "a diagnostic's range ends before it starts: \(diagnostic.jsonString)" })
      check((1...4).contains(diagnostic["severity"]?.intValue ?? 0), { "severity: \(diagnostic.jsonString)" })
      check(diagnostic["message"]?.stringValue != nil, { "a diagnostic without a message" })
    }
  }
}
