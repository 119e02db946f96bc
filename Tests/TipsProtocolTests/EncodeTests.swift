import Testing
import TipsJSON
import TipsProtocol

/// Bytes as text.
func text(_ bytes: [UInt8]) -> String {
  String(decoding: bytes, as: UTF8.self)
}

@Suite struct EncodeTests {
  @Test func result() {
    #expect(text(OutgoingMessage.encodeResult(id: 1, result: 19)) == #"{"jsonrpc":"2.0","id":1,"result":19}"#)
    #expect(
      text(OutgoingMessage.encodeResult(id: "a\"b", result: ["x": [true, nil]]))
        == #"{"jsonrpc":"2.0","id":"a\"b","result":{"x":[true,null]}}"#)
    #expect(text(OutgoingMessage.encodeResult(id: nil, result: nil)) == #"{"jsonrpc":"2.0","id":null,"result":null}"#)
  }

  @Test func resultWrittenInPlace() {
    let bytes = OutgoingMessage.encodeResult(id: 9) { writer in
      writer.beginObject()
      writer.key("now")
      writer.writeDouble(1.5)
      writer.endObject()
    }
    #expect(text(bytes) == #"{"jsonrpc":"2.0","id":9,"result":{"now":1.5}}"#)
  }

  @Test func error() {
    #expect(
      text(OutgoingMessage.encodeError(id: nil, error: .parseError("bad", offset: 4)))
        == #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: bad","data":{"offset":4}}}"#)
    #expect(
      text(OutgoingMessage.encodeError(id: 3, error: .methodNotFound("x/y")))
        == #"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"unknown method \"x/y\""}}"#)
    #expect(
      text(OutgoingMessage.encodeError(id: "q", error: ResponseError(code: 7, message: "m", data: ["k": 1])))
        == #"{"jsonrpc":"2.0","id":"q","error":{"code":7,"message":"m","data":{"k":1}}}"#)
  }

  @Test func batch() {
    let parts = [
      OutgoingMessage.encodeResult(id: 1, result: 7), OutgoingMessage.encodeError(id: 2, error: .methodNotFound("m")),
    ]
    #expect(
      text(OutgoingMessage.encodeBatch(parts))
        == #"[{"jsonrpc":"2.0","id":1,"result":7},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"unknown method \"m\""}}]"#
    )
    #expect(text(OutgoingMessage.encodeBatch([])) == "[]")
  }

  @Test func encodedRepliesDecodeAsResponses() {
    let bytes = OutgoingMessage.encodeError(id: 5, error: .unknownTip("t"))
    #expect(IncomingPayload.decode(bytes) == .single(.response(id: 5, result: .failure(.unknownTip("t")))))
  }
}

@Suite struct ErrorTests {
  @Test func codes() {
    let expected: [(ErrorCode, Int)] = [
      (.parseError, -32700), (.invalidRequest, -32600), (.methodNotFound, -32601), (.invalidParams, -32602),
      (.internalError, -32603), (.serverNotInitialized, -32002), (.requestCancelled, -32800),
      (.unknownTip, -32001), (.unknownSubscription, -32003), (.virtualClockDisabled, -32004),
      (.datastoreFailure, -32005), (.shuttingDown, -32006), (.unknownGroup, -32007), (.unknownAction, -32008),
      (.invalidRule, -32009), (.tooManyConnections, -32010),
    ]
    for (code, raw) in expected { #expect(code.rawValue == raw) }
    #expect(Set(expected.map(\.0)).count == expected.count)
  }

  /// The factories carry the `data` members protocol/README.md documents.
  @Test func factories() {
    #expect(ResponseError.methodNotFound("x").message == #"unknown method "x""#)
    #expect(ResponseError.invalidParams("p").code == .invalidParams)
    #expect(ResponseError.unknownTip("t").data == ["id": "t"])
    #expect(ResponseError.unknownGroup("g").data == ["id": "g"])
    #expect(ResponseError.unknownAction("a", tip: "t", known: ["b", "c"]).data == ["id": "t", "actionId": "a"])
    #expect(
      ResponseError.unknownAction("a", tip: "t", known: []).message
        == #"unknown action "a" for tip "t" (its actions: none)"#)
    #expect(ResponseError.unknownSubscription(method: "tips/unobserve", id: "s").data == ["subscription": "s"])
    #expect(ResponseError.unknownParameter(method: "parameters/set", id: "p").data == ["id": "p"])
    #expect(
      ResponseError.invalidDefinition(method: "tips/register", path: "tips[0].id", problem: "x").data == [
        "path": "params.tips[0].id"
      ])
    #expect(ResponseError.parseError("x", offset: 3).data == ["offset": 3])
    #expect(ResponseError.serverNotInitialized(method: "m").code == .serverNotInitialized)
    #expect(ResponseError.shuttingDown().code == .shuttingDown)
    #expect(ResponseError.virtualClockDisabled(method: "clock/advance").code == .virtualClockDisabled)
    #expect(ResponseError.datastoreFailure(path: "/d").message.contains("not committed to /d"))
    #expect(ResponseError.tooManyConnections(limit: 2).code == .tooManyConnections)
    #expect(ResponseError.emptyBatch().code == .invalidRequest)
    #expect(
      ResponseError.unknownParam(method: "tips/status", name: "id", allowed: ["ids"]).message
        == #"tips/status: unknown param "id" (expected ids)"#)
  }

  @Test func json() {
    #expect(ResponseError(code: .internalError, message: "boom").json == ["code": -32603, "message": "boom"])
    #expect(
      ResponseError(code: .internalError, message: "boom", data: [1]).json == [
        "code": -32603, "message": "boom", "data": [1],
      ])
    #expect(
      ResponseError(json: ["code": -32603, "message": "boom"]) == ResponseError(code: .internalError, message: "boom"))
    #expect(ResponseError(json: ["code": 1.5, "message": "boom"]) == nil)
  }

  /// `events/donate`'s reply is composed in one append from a stack buffer (``DonateRequest/Response/writeReply``):
  /// byte for byte the generic writer's, at the integers' extremes too (an id of 20 characters must fit).
  @Test(
    "the donate reply composed in one append matches the generic writer",
    arguments: [0, 1, -1, 9, 10, 99_999, Int64.max, Int64.min, Int64.max - 1, -9_999_999_999] as [Int64])
  func composedDonateReply(id: Int64) {
    for (count, lifetime) in [(0, 0), (1, 1), (1_000, 123_456_789), (Int.max, Int.min), (Int.min, Int.max)] {
      let response = DonateRequest.Response(count: count, lifetime: lifetime)
      for requestID in [RequestID.int(id), .string("a\"b\(id)"), nil] as [RequestID?] {
        var composed = JSONWriter()
        composed.writeRaw(Array("[".utf8))
        response.writeReply(id: requestID, to: &composed)
        // A value after the reply is separated as after the generic writer's.
        composed.writeInt(7)
        var generic = JSONWriter()
        generic.writeRaw(Array("[".utf8))
        OutgoingMessage.writeResult(id: requestID, to: &generic) { response.write(to: &$0) }
        generic.writeInt(7)
        #expect(text(composed.bytes) == text(generic.bytes))
      }
    }
    var writer = JSONWriter()
    DonateRequest.Response(count: 2, lifetime: 3).writeReply(id: .int(id), to: &writer)
    #expect(
      text(writer.bytes) == #"{"jsonrpc":"2.0","id":\#(id),"result":{"count":2,"lifetime":3}}"#)
  }
}
