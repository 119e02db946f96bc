import Foundation
import TipsFraming
import TipsJSON
import TipsTestSupport
import Testing

/// JSON-RPC 2.0 behaviour, lifecycle and every error code, against the real binary.
@Suite struct ProtocolTests {
  @Test func requestsBeforeInitializeAreRefused() throws {
    let daemon = try Daemon([], socket: false)
    defer { daemon.stop() }
    let client = daemon.stdioClient()
    let early = try client.call("tips/status")
    #expect(early["error"]?["code"] == -32002)
    #expect(early["error"]?["message"]?.stringValue?.contains("initialize") == true)
    // rpc.discover is allowed before initialize.
    #expect(try client.result("rpc.discover")["openrpc"] != nil)
    try client.initialize()
    let again = try client.call("initialize", ["protocolVersion": "1.0", "clientInfo": ["name": "x"]])
    #expect(again["error"]?["code"] == -32600)
  }

  @Test func protocolVersionMajorMustMatch() throws {
    let daemon = try Daemon([], socket: false)
    defer { daemon.stop() }
    let client = daemon.stdioClient()
    let reply = try client.call("initialize", ["protocolVersion": "2.0", "clientInfo": ["name": "x"]])
    #expect(reply["error"]?["code"] == -32602)
    #expect(reply["error"]?["message"]?.stringValue?.contains("1.2") == true)
  }

  @Test func specificationExamples() throws {
    let daemon = try Daemon([], socket: false)
    defer { daemon.stop() }
    let client = daemon.stdioClient()
    try client.initialize()
    try client.result("tips/register", ["tips": [["id": "t", "title": "T"]]])

    // Parse error: id null.
    try client.sendRaw(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#)
    let parse = try #require(try client.readMessage())
    #expect(parse["error"]?["code"] == -32700)
    #expect(parse["id"] == .null)

    // Invalid request object.
    try client.sendRaw(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#)
    let invalid = try #require(try client.readMessage())
    #expect(invalid["error"]?["code"] == -32600)
    #expect(invalid["id"] == .null)

    // Empty batch: one error, not an array.
    try client.sendRaw("[]")
    let empty = try #require(try client.readMessage())
    #expect(empty["error"]?["code"] == -32600)

    // [1] and [1,2,3]: an array of invalid-request errors.
    try client.sendRaw("[1]")
    #expect(try client.readMessage()?.arrayValue?.count == 1)
    try client.sendRaw("[1,2,3]")
    let three = try #require(try client.readMessage()?.arrayValue)
    #expect(three.count == 3)
    #expect(three.allSatisfy { $0["error"]?["code"] == -32600 && $0["id"] == .null })

    // Mixed batch: results, an unknown method, an invalid request; notifications get nothing.
    try client.sendRaw(
      """
      [{"jsonrpc":"2.0","method":"events/donate","params":{"id":"a"},"id":"1"},
       {"jsonrpc":"2.0","method":"events/donate","params":["b"]},
       {"jsonrpc":"2.0","method":"events/donate","params":["a"],"id":"2"},
       {"foo":"boo"},
       {"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
       {"jsonrpc":"2.0","method":"tips/status","id":"9"}]
      """.replacingOccurrences(of: "\n", with: ""))
    let batch = try #require(try client.readMessage()?.arrayValue)
    #expect(batch.count == 5)
    #expect(batch.first { $0["id"] == "1" }?["result"]?["count"] == 1)
    #expect(batch.first { $0["id"] == "2" }?["result"]?["count"] == 2)
    #expect(batch.first { $0["id"] == "5" }?["error"]?["code"] == -32601)
    #expect(batch.first { $0["id"] == .null }?["error"]?["code"] == -32600)
    #expect(batch.first { $0["id"] == "9" }?["result"]?["tips"]?.arrayValue?.count == 1)

    // All notifications: no reply at all; the next request is answered first.
    try client.sendRaw(
      #"[{"jsonrpc":"2.0","method":"events/donate","params":{"id":"n"}},{"jsonrpc":"2.0","method":"events/donate","params":{"id":"n"}}]"#
    )
    #expect(try client.result("events/donate", ["id": "n"])["count"] == 3)
  }

  @Test func everyErrorCodeHasAnActionableMessage() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    func error(_ method: String, _ params: JSONValue?) throws -> (Int64?, String) {
      let reply = try client.call(method, params)
      return (reply["error"]?["code"]?.intValue, reply["error"]?["message"]?.stringValue ?? "")
    }
    var (code, message) = try error("tips/nothing", nil)
    #expect(code == -32601)
    #expect(message.contains("tips/nothing"))

    (code, message) = try error("events/donate", ["info": [:]])
    #expect(code == -32602)
    #expect(message.contains("\"id\""))

    (code, message) = try error("events/donate", ["id": 3])
    #expect(code == -32602)

    (code, message) = try error("tips/register", ["tips": [["id": "a", "title": "A"], ["id": "b", "title": "B", "rules": [["event": "e", "count": ["gte ": 1]]]]]])
    #expect(code == -32602)
    #expect(message.contains("tips[1].rules[0].count"), "\(message)")
    #expect(message.contains("gte "), "\(message)")

    (code, message) = try error("tips/invalidate", ["id": "missing.tip"])
    #expect(code == -32001)
    #expect(message.contains("missing.tip"))

    (code, message) = try error("tips/unobserve", ["subscription": 5])
    #expect(code == -32602)

    (code, message) = try error("clock/advance", ["seconds": 60])
    #expect(code == -32004)
    #expect(message.contains("--clock virtual"))

    (code, message) = try error("tips/observe", ["groups": ["nope"]])
    #expect(code == -32007)

    (code, message) = try error("parameters/set", ["id": "undeclared", "value": true])
    #expect(code == -32602)
    #expect(message.contains("parameters/define"))

    try client.result("shutdown")
    (code, message) = try error("tips/status", nil)
    #expect(code == -32006)
  }

  @Test func oversizedFramesAreRefusedAndTheConnectionClosed() throws {
    let daemon = try Daemon(["--max-message-size", "4096"])
    defer { daemon.stop() }
    for framing in [Framing.newline, .contentLength] {
      let client = try daemon.connect(framing: framing)
      try client.initialize()
      let big = String(repeating: "x", count: 10_000)
      try? client.sendRaw(#"{"jsonrpc":"2.0","id":7,"method":"events/donate","params":{"id":"\#(big)"}}"#)
      let reply = try #require(try client.readMessage())
      #expect(reply["error"]?["code"] == -32600)
      #expect(reply["id"] == .null)
      #expect(client.readUntilEOF().eof)  // closed
    }
    // Others keep being served.
    let healthy = try daemon.connect()
    try healthy.initialize()
    #expect(try healthy.result("events/donate", ["id": "ok"])["count"] == 1)
  }

  @Test func unrecognizedFramingGetsAnErrorAndIsClosed() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.write(Array("hello there\n".utf8))
    let reply = try #require(try client.readMessage())
    #expect(reply["error"]?["code"] == -32600)
    #expect(client.readUntilEOF().eof)
  }

  @Test func discoverListsEveryAnsweredMethod() throws {
    let daemon = try Daemon([], socket: false)
    defer { daemon.stop() }
    let client = daemon.stdioClient()
    let hello = try client.initialize()
    let list = try #require(hello["capabilities"]?["methods"]?.arrayValue)
    let methods = list.compactMap { $0.stringValue }
    #expect(methods.contains("events/donate"))
    #expect(methods.contains("tips/observe"))
    let document = try client.result("rpc.discover")
    #expect(document["openrpc"]?.stringValue?.hasPrefix("1.") == true)
  }
}
