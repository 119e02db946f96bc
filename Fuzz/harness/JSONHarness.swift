// fuzz-target: json
// Fuzzes TipsJSON.JSONParser: no crash on any input, and what parses round-trips through the writer
// (serialize ∘ parse is idempotent on its own output).
import TipsJSON

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let buffer = UnsafeRawBufferPointer(start: data, count: size)
  guard let value = try? JSONParser.parse(buffer, maxDepth: 64) else { return 0 }
  let once = value.serialized()
  let reparsed: JSONValue
  do {
    reparsed = try JSONParser.parse(once, maxDepth: 64)
  } catch {
    fuzzCheck(false, "the writer produced unparsable JSON: \(error) in \(String(decoding: once, as: UTF8.self))")
    return 0
  }
  let twice = reparsed.serialized()
  fuzzCheck(once == twice, "serialization is not stable: \(String(decoding: once, as: UTF8.self)) vs \(String(decoding: twice, as: UTF8.self))")
  return 0
}
