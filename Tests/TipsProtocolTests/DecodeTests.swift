import Testing
import TipsJSON
import TipsProtocol

/// Decodes the UTF-8 of `text`.
func decode(_ text: String) -> IncomingPayload {
  IncomingPayload.decode(Array(text.utf8))
}

/// The single message decoded from `text`.
func single(_ text: String) -> IncomingMessage? {
  guard case .single(let message) = decode(text) else { return nil }
  return message
}

/// The error code of an `.invalid` message.
func errorCode(_ message: IncomingMessage?) -> ErrorCode? {
  guard case .invalid(_, let error)? = message else { return nil }
  return error.code
}

/// The reply id of an `.invalid` message (`.some(nil)` for null).
func errorID(_ message: IncomingMessage?) -> RequestID?? {
  guard case .invalid(let id, _)? = message else { return nil }
  return .some(id)
}

/// Examples from the JSON-RPC 2.0 specification, §7.
@Suite struct SpecificationExampleTests {
  @Test func positionalParameters() {
    #expect(
      single(#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#)
        == .request(id: 1, method: "subtract", params: [42, 23]))
  }

  @Test func namedParameters() {
    #expect(
      single(#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#)
        == .request(id: 3, method: "subtract", params: ["subtrahend": 23, "minuend": 42]))
  }

  @Test func notification() {
    #expect(
      single(#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#)
        == .notification(method: "update", params: [1, 2, 3, 4, 5]))
    #expect(single(#"{"jsonrpc": "2.0", "method": "foobar"}"#) == .notification(method: "foobar", params: nil))
  }

  @Test func invalidJSON() throws {
    let message = single(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#)
    guard case .invalid(let id, let error)? = message else {
      Issue.record("expected .invalid, got \(String(describing: message))")
      return
    }
    #expect(id == nil)
    #expect(error.code == .parseError)
    #expect(error.message == "parse error: invalid JSON at byte 39: expected ',' or '}' after object member")
    #expect(error.data == ["offset": 39])
  }

  @Test func invalidRequestObject() {
    let message = single(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#)
    #expect(errorCode(message) == .invalidRequest)
    #expect(errorID(message) == .some(nil))
  }

  @Test func batchWithInvalidJSON() {
    let message = single(
      #"[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method""#)
    #expect(errorCode(message) == .parseError)
  }

  @Test func emptyArray() {
    #expect(decode("[]") == .emptyBatch)
    #expect(decode(" [ ] ") == .emptyBatch)
  }

  @Test func invalidBatchButNotEmpty() {
    guard case .batch(let messages) = decode("[1]") else {
      Issue.record("expected a batch")
      return
    }
    #expect(messages.count == 1)
    #expect(errorCode(messages[0]) == .invalidRequest)
    #expect(errorID(messages[0]) == .some(nil))
  }

  @Test func invalidBatch() {
    guard case .batch(let messages) = decode("[1,2,3]") else {
      Issue.record("expected a batch")
      return
    }
    #expect(messages.count == 3)
    for message in messages {
      #expect(errorCode(message) == .invalidRequest)
      #expect(errorID(message) == .some(nil))
    }
  }

  @Test func mixedBatch() {
    let text = """
      [
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
      ]
      """
    guard case .batch(let messages) = decode(text) else {
      Issue.record("expected a batch")
      return
    }
    #expect(messages.count == 6)
    #expect(messages[0] == .request(id: "1", method: "sum", params: [1, 2, 4]))
    #expect(messages[1] == .notification(method: "notify_hello", params: [7]))
    #expect(messages[2] == .request(id: "2", method: "subtract", params: [42, 23]))
    #expect(errorCode(messages[3]) == .invalidRequest)
    #expect(messages[4] == .request(id: "5", method: "foo.get", params: ["name": "myself"]))
    #expect(messages[5] == .request(id: "9", method: "get_data", params: nil))
  }

  @Test func batchOfNotifications() {
    let text =
      #"[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]"#
    #expect(
      decode(text)
        == .batch([
          .notification(method: "notify_sum", params: [1, 2, 4]), .notification(method: "notify_hello", params: [7]),
        ]))
  }
}

@Suite struct ClassificationTests {
  @Test func nullIDIsARequestRepliedToWithNull() {
    #expect(single(#"{"jsonrpc":"2.0","id":null,"method":"m"}"#) == .request(id: nil, method: "m", params: nil))
  }

  @Test func idTypes() {
    #expect(single(#"{"jsonrpc":"2.0","id":"abc","method":"m"}"#) == .request(id: "abc", method: "m", params: nil))
    #expect(single(#"{"jsonrpc":"2.0","id":-5,"method":"m"}"#) == .request(id: -5, method: "m", params: nil))
    #expect(single(#"{"jsonrpc":"2.0","id":2.0,"method":"m"}"#) == .request(id: 2, method: "m", params: nil))
    for bad in ["1.5", "true", "[1]", "{}", "1e300"] {
      let message = single(#"{"jsonrpc":"2.0","id":\#(bad),"method":"m"}"#)
      #expect(errorCode(message) == .invalidRequest, "id \(bad)")
      #expect(errorID(message) == .some(nil), "id \(bad)")
    }
  }

  @Test func fractionalIDMessage() throws {
    guard case .invalid(_, let error)? = single(#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#) else {
      Issue.record("expected .invalid")
      return
    }
    #expect(error.message == "invalid request: id must be a string, an integer or null (got a non-integral number)")
  }

  @Test func jsonrpcMustBeExactly2_0() {
    for version in [#""1.0""#, "2.0", "2", #""2.0 ""#, "null"] {
      let message = single(#"{"jsonrpc":\#(version),"id":7,"method":"m"}"#)
      #expect(errorCode(message) == .invalidRequest, "jsonrpc \(version)")
      #expect(errorID(message) == .some(.int(7)), "the id is recovered")
    }
    let missing = single(#"{"id":"x","method":"m"}"#)
    #expect(errorCode(missing) == .invalidRequest)
    #expect(errorID(missing) == .some(.string("x")))
  }

  @Test func methodMustBeAString() {
    let message = single(#"{"jsonrpc":"2.0","id":1,"method":["m"]}"#)
    guard case .invalid(let id, let error)? = message else {
      Issue.record("expected .invalid")
      return
    }
    #expect(id == 1)
    #expect(error == .invalidRequest("\"method\" must be a string (got array)"))
    #expect(errorCode(single(#"{"jsonrpc":"2.0","id":1}"#)) == .invalidRequest)
  }

  @Test func paramsMustBeStructured() {
    for params in ["1", #""x""#, "true"] {
      let message = single(#"{"jsonrpc":"2.0","id":4,"method":"m","params":\#(params)}"#)
      #expect(errorCode(message) == .invalidRequest, "params \(params)")
      #expect(errorID(message) == .some(.int(4)))
    }
    // null params count as absent.
    #expect(
      single(#"{"jsonrpc":"2.0","id":4,"method":"m","params":null}"#) == .request(id: .int(4), method: "m", params: nil)
    )
    #expect(single(#"{"jsonrpc":"2.0","method":"exit","params":null}"#) == .notification(method: "exit", params: nil))
    // A malformed notification is still answered, with id null.
    let notification = single(#"{"jsonrpc":"2.0","method":"m","params":1}"#)
    #expect(errorCode(notification) == .invalidRequest)
    #expect(errorID(notification) == .some(nil))
  }

  @Test func nonObjects() {
    for text in ["1", #""x""#, "null", "true"] {
      #expect(errorCode(single(text)) == .invalidRequest, "\(text)")
    }
    guard case .batch(let messages) = decode("[[]]") else {
      Issue.record("expected a batch")
      return
    }
    #expect(errorCode(messages[0]) == .invalidRequest)
  }

  @Test func clientResponses() {
    #expect(
      single(#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#) == .response(id: 1, result: .success(["ok": true])))
    #expect(single(#"{"jsonrpc":"2.0","id":null,"result":null}"#) == .response(id: nil, result: .success(nil)))
    #expect(
      single(#"{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"nope","data":[1]}}"#)
        == .response(id: "a", result: .failure(ResponseError(code: .methodNotFound, message: "nope", data: [1]))))
    #expect(
      errorCode(single(#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}"#)) == .invalidRequest)
    #expect(errorCode(single(#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"x"}}"#)) == .invalidRequest)
    #expect(errorCode(single(#"{"jsonrpc":"2.0","result":1}"#)) == .invalidRequest)
  }

  @Test func decodeFromRawBuffer() {
    let bytes = Array(#"{"jsonrpc":"2.0","id":1,"method":"tips/status","params":{"id":"t"}}"#.utf8)
    let payload = bytes.withUnsafeBytes { IncomingPayload.decode($0) }
    #expect(payload == .single(.request(id: 1, method: StatusRequest.method, params: ["id": "t"])))
  }
}
