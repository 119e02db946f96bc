import Testing
import TipsFraming
import TipsJSON
import TipsProtocol
import TipsTestSupport

/// JSON-RPC 2.0 behaviour, lifecycle and every error code, in process on the embedded loop (the transports are
/// tested against the real binary in FilterTipTests and ServingTests).
@Suite struct ProtocolTests {
  /// Sends raw text and returns the one message it gets back.
  func exchange(_ client: EmbeddedClient, _ text: String) throws -> JSONValue? {
    client.sendRaw(text)
    try client.flush()
    return client.takeFirst(1).first
  }

  @Test func requestsBeforeInitializeAreRefused() throws {
    let fixture = try TestServer()
    let client = try fixture.connect(initialize: false)
    let early = try client.refusal("tips/status")
    #expect(early.code == .serverNotInitialized)
    #expect(early.message.contains("initialize"))
    // rpc.discover is allowed before initialize.
    #expect(try client.result(DiscoverRequest.self).document["openrpc"] != nil)
    try client.initialize()
    let again = try client.refusal("initialize", InitializeRequest(clientName: "x").encodedParams)
    #expect(again.code == .invalidRequest)
  }

  @Test func protocolVersionMajorMustMatch() throws {
    let fixture = try TestServer()
    let client = try fixture.connect(initialize: false)
    let other = "\(Int(ProtocolVersion.major)! + 1).0"
    let refused = try client.refusal(
      "initialize", InitializeRequest(protocolVersion: other, clientName: "x").encodedParams)
    #expect(refused.code == .invalidParams)
    #expect(refused.message.contains("this daemon speaks \(ProtocolVersion.current)"))
    // An older minor of the same major is accepted, and answered with the daemon's own version.
    let older = InitializeRequest(protocolVersion: "\(ProtocolVersion.major).0", clientName: "x")
    #expect(try client.send(older).protocolVersion == ProtocolVersion.current)
  }

  @Test func specificationExamples() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    try client.result(RegisterTipsRequest.self, ["tips": [["id": "t", "title": "T"]]])

    // Parse error: id null.
    let parse = try #require(try exchange(client, #"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#))
    #expect(parse["error"].flatMap(ResponseError.init(json:))?.code == .parseError)
    #expect(parse["id"] == .null)

    // Invalid request object.
    let invalid = try #require(try exchange(client, #"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#))
    #expect(invalid["error"].flatMap(ResponseError.init(json:))?.code == .invalidRequest)
    #expect(invalid["id"] == .null)

    // Empty batch: one error, not an array.
    let empty = try #require(try exchange(client, "[]"))
    #expect(empty["error"].flatMap(ResponseError.init(json:))?.code == .invalidRequest)

    // [1] and [1,2,3]: an array of invalid-request errors.
    #expect(try exchange(client, "[1]")?.arrayValue?.count == 1)
    let three = try #require(try exchange(client, "[1,2,3]")?.arrayValue)
    #expect(three.count == 3)
    #expect(
      three.allSatisfy { $0["error"].flatMap(ResponseError.init(json:))?.code == .invalidRequest && $0["id"] == .null })

    // Mixed batch: results, an unknown method, an invalid request; notifications get nothing.
    let batch = try #require(
      try exchange(
        client,
        """
        [{"jsonrpc":"2.0","method":"events/donate","params":{"id":"a"},"id":"1"},\
        {"jsonrpc":"2.0","method":"events/donate","params":["b"]},\
        {"jsonrpc":"2.0","method":"events/donate","params":["a"],"id":"2"},\
        {"foo":"boo"},\
        {"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},\
        {"jsonrpc":"2.0","method":"tips/status","id":"9"}]
        """)?.arrayValue)
    #expect(batch.count == 5)
    func reply(_ id: JSONValue) -> JSONValue? { batch.first { $0["id"] == id } }
    #expect(try reply("1")?["result"].map(DonateRequest.Response.init(json:))?.count == 1)
    #expect(try reply("2")?["result"].map(DonateRequest.Response.init(json:))?.count == 2)
    #expect(reply("5")?["error"].flatMap(ResponseError.init(json:))?.code == .methodNotFound)
    #expect(reply(.null)?["error"].flatMap(ResponseError.init(json:))?.code == .invalidRequest)
    #expect(try reply("9")?["result"].map(TipStatesResult.init(json:))?.tips.count == 1)

    // All notifications: no reply at all; the next request is answered first.
    client.sendRaw(
      #"[{"jsonrpc":"2.0","method":"events/donate","params":{"id":"n"}},{"jsonrpc":"2.0","method":"events/donate","params":{"id":"n"}}]"#
    )
    try client.flush()
    #expect(client.inbox.isEmpty)
    #expect(try client.result(DonateRequest.self, ["id": "n"]).count == 3)
  }

  @Test func everyErrorCodeHasAnActionableMessage() throws {
    let fixture = try TestServer { $0.allowTesting = true }
    let client = try fixture.connect()
    var error = try client.refusal("tips/nothing")
    #expect(error.code == .methodNotFound)
    #expect(error.message.contains("tips/nothing"))

    error = try client.refusal("events/donate", ["info": [:]])
    #expect(error.code == .invalidParams)
    #expect(error.message.contains("\"id\""))

    #expect(try client.refusal("events/donate", ["id": 3]).code == .invalidParams)

    error = try client.refusal(
      "tips/register",
      [
        "tips": [
          ["id": "a", "title": "A"], ["id": "b", "title": "B", "rules": [["event": "e", "count": ["gte ": 1]]]],
        ]
      ])
    #expect(error.code == .invalidParams)
    #expect(error.message.contains("tips[1].rules[0].count"), "\(error.message)")
    #expect(error.message.contains("gte "), "\(error.message)")

    error = try client.refusal("tips/invalidate", ["id": "missing.tip"])
    #expect(error.code == .unknownTip)
    #expect(error.message.contains("missing.tip"))

    #expect(try client.refusal("tips/unobserve", ["subscription": 5]).code == .invalidParams)

    error = try client.refusal("clock/advance", ["seconds": 60])
    #expect(error.code == .virtualClockDisabled)
    #expect(error.message.contains("--clock virtual"))

    #expect(try client.refusal("tips/observe", ["groups": ["nope"]]).code == .unknownGroup)

    error = try client.refusal("parameters/set", ["id": "undeclared", "value": true])
    #expect(error.code == .invalidParams)
    #expect(error.message.contains("parameters/define"))

    try client.result(ShutdownRequest.self)
    #expect(try client.refusal("tips/status").code == .shuttingDown)
  }

  @Test(arguments: [Framing.newline, .contentLength])
  func oversizedFramesAreRefusedAndTheConnectionClosed(framing: Framing) throws {
    let fixture = try TestServer { $0.maxMessageSize = 4096 }
    let client = try fixture.connect(framing: framing)
    let big = String(repeating: "x", count: 10_000)
    let reply = try #require(
      try exchange(client, #"{"jsonrpc":"2.0","id":7,"method":"events/donate","params":{"id":"\#(big)"}}"#))
    #expect(reply["error"].flatMap(ResponseError.init(json:))?.code == .invalidRequest)
    #expect(reply["id"] == .null)
    #expect(client.stream.isClosed)
    // Others keep being served.
    let healthy = try fixture.connect()
    #expect(try healthy.result(DonateRequest.self, ["id": "ok"]).count == 1)
  }

  @Test func unrecognizedFramingGetsAnErrorAndIsClosed() throws {
    let fixture = try TestServer()
    let client = try fixture.connect(initialize: false)
    client.write(Array("hello there\n".utf8))
    try client.flush()
    let reply = try #require(client.takeFirst(1).first)
    #expect(reply["error"].flatMap(ResponseError.init(json:))?.code == .invalidRequest)
    #expect(client.stream.isClosed)
  }

  @Test func discoverListsEveryAnsweredMethod() throws {
    let fixture = try TestServer()
    let client = try fixture.connect(initialize: false)
    let hello = try client.initialize()
    #expect(hello.protocolVersion == ProtocolVersion.current && hello.serverName == "tipsd")
    #expect(hello.methods == Messages.clientMethods)
    #expect(hello.methods.contains("events/donate") && hello.methods.contains("tips/observe"))
    let document = try client.result(DiscoverRequest.self).document
    #expect(document["openrpc"]?.stringValue?.hasPrefix("1.") == true)
    #expect(document["info"]?["version"]?.stringValue == ProtocolVersion.current)
  }
}
