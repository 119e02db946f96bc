// fuzz-target: jsonrpc
// Fuzzes TipsProtocol's message decoder (IncomingPayload.decode) and what the server does next with a message:
// Params access with the typed accessors, and the error reply, which must always be valid JSON; and that the plain
// request fast path (PlainRequest) reads exactly what the full parser does.
import TipsJSON
import TipsProtocol

let keys = ["id", "ids", "info", "tips", "value", "seconds", "now", "subscription", "protocolVersion", "clientInfo"]

func exercise(_ message: IncomingMessage) {
  switch message {
  case .invalid(let id, let error):
    let reply = OutgoingMessage.encodeError(id: id, error: error)
    fuzzCheck((try? JSONParser.parse(reply)) != nil, "an error reply is not JSON: \(String(decoding: reply, as: UTF8.self))")
  case .request(let id, let method, let params):
    let positional = method == "events/donate" ? ["id", "info"] : []
    do {
      let p = try Params(params, method: method, positional: positional)
      for key in keys {
        _ = try? p.string(key)
        _ = try? p.optionalInt(key)
        _ = try? p.optionalDouble(key)
        _ = try? p.optionalStringArray(key)
        _ = try? p.optionalObject(key)
        _ = try? p.optionalBool(key)
        _ = try? p.optionalNested(key)
      }
      let reply = OutgoingMessage.encodeResult(id: id, result: params ?? .null)
      fuzzCheck((try? JSONParser.parse(reply)) != nil, "a result reply is not JSON")
    } catch {
      let reply = OutgoingMessage.encodeError(id: id, error: error)
      fuzzCheck((try? JSONParser.parse(reply)) != nil, "a params error reply is not JSON: \(String(decoding: reply, as: UTF8.self))")
    }
  case .notification(let method, let params):
    _ = try? Params(params, method: method)
  case .response:
    break
  }
}

/// The plain-shape fast path reads exactly what the full parser does (params compared in member order).
func checkFastPath(_ buffer: UnsafeRawBufferPointer) {
  guard let fast = PlainRequest.scan(buffer) else { return }
  let full = IncomingPayload.decodeParsingFully(buffer)
  fuzzCheck(full == .single(fast), "the plain path disagrees with the parser")
  if case .single(.request(_, _, let a?)) = full, case .request(_, _, let b?) = fast {
    fuzzCheck(a.jsonString == b.jsonString, "the plain path reordered params")
  }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  checkFastPath(UnsafeRawBufferPointer(start: data, count: size))
  switch IncomingPayload.decode(UnsafeRawBufferPointer(start: data, count: size)) {
  case .single(let message): exercise(message)
  case .batch(let messages):
    fuzzCheck(!messages.isEmpty, "an empty .batch")
    messages.forEach(exercise)
  case .emptyBatch: break
  }
  return 0
}
