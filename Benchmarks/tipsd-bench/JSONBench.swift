import Foundation
import TipsJSON
import TipsProtocol

// The JSON hot path: parse one small request and write its reply, with TipsJSON (what tipsd uses) and with
// Foundation's JSONSerialization and Codable, in one run.

private let request = Array(
  #"{"jsonrpc":"2.0","id":42,"method":"events/donate","params":{"id":"trail.visited","info":{"region":"north","n":3}}}"#
    .utf8)

private func measure(_ label: String, iterations: Int, _ body: () throws -> Int) rethrows -> Double {
  var sink = 0
  for _ in 0..<(iterations / 10) { sink &+= try body() }
  let start = monotonic()
  for _ in 0..<iterations { sink &+= try body() }
  let elapsed = monotonic() - start
  precondition(sink != 0, label)
  return elapsed / Double(iterations) * 1e6
}

private struct DonateRequest: Codable {
  struct Params: Codable {
    var id: String
    var info: [String: AnyCodableValue]?
  }
  var jsonrpc: String
  var id: Int
  var method: String
  var params: Params
}

private enum AnyCodableValue: Codable {
  case string(String), int(Int)
  init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if let i = try? container.decode(Int.self) {
      self = .int(i)
    } else {
      self = .string(try container.decode(String.self))
    }
  }
  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .string(let s): try container.encode(s)
    case .int(let i): try container.encode(i)
    }
  }
}

private struct DonateReply: Codable {
  struct Result: Codable { var count: Int }
  var jsonrpc = "2.0"
  var id: Int
  var result: Result
}

func runJSONBenchmarks() throws {
  let tips = measure("tipsjson", iterations: 200_000) {
    guard case .single(.request(let id, _, let params)) = IncomingPayload.decode(request) else { return 0 }
    let count = params?["info"]?["n"]?.intValue ?? 0
    return OutgoingMessage.encodeResult(id: id, result: .object(["count": .int(count)])).count
  }
  // The same through the full parser (what a request of any other shape takes).
  let full = measure("tipsjson-full", iterations: 200_000) {
    guard case .single(.request(let id, _, let params)) = IncomingPayload.decodeParsingFully(request) else { return 0 }
    let count = params?["info"]?["n"]?.intValue ?? 0
    return OutgoingMessage.encodeResult(id: id, result: .object(["count": .int(count)])).count
  }
  // The protocol work of one `events/donate` in the server: decode, typed params, the typed reply.
  let donate = try measure("donate", iterations: 200_000) {
    guard case .single(.request(let id, _, let params)) = IncomingPayload.decode(request) else { return 0 }
    let decoded = try Messages.decode(TipsProtocol.DonateRequest.self, params: params)
    let response = TipsProtocol.DonateRequest.Response(count: decoded.info?.count ?? 0, lifetime: 1)
    return OutgoingMessage.encodeResult(id: id) { response.write(to: &$0) }.count
  }
  // Reading the plain donate envelope alone (PlainRequest), with event id and info as Swift values.
  let plainDonate = Array(#"{"jsonrpc":"2.0","id":42,"method":"events/donate","params":{"id":"search.opened"}}"#.utf8)
  let scan = measure("scan", iterations: 400_000) {
    plainDonate.withUnsafeBytes { buffer in
      guard case .request(_, let method, let params)? = PlainRequest.scan(buffer) else { return 0 }
      return method.utf8.count + (params?["id"]?.stringValue?.utf8.count ?? 0)
    }
  }
  let data = Data(request)
  let serialization = try measure("serialization", iterations: 20_000) {
    let object = try JSONSerialization.jsonObject(with: data) as! [String: Any]
    let id = object["id"] as! Int
    let reply: [String: Any] = ["jsonrpc": "2.0", "id": id, "result": ["count": 3]]
    return try JSONSerialization.data(withJSONObject: reply).count
  }
  let decoder = JSONDecoder()
  let encoder = JSONEncoder()
  let codable = try measure("codable", iterations: 20_000) {
    let decoded = try decoder.decode(DonateRequest.self, from: data)
    return try encoder.encode(DonateReply(id: decoded.id, result: .init(count: 3))).count
  }
  // A large array, and one twice its size in the same run: linear parsing keeps the ratio near 2. Rounds alternate
  // the two, and each keeps its fastest round (the least disturbed by the rest of a shared machine).
  func largeArray(_ count: Int) -> [UInt8] {
    Array(("[" + (0..<count).map(String.init).joined(separator: ",") + "]").utf8)
  }
  let large = largeArray(200_000), twice = largeArray(400_000)
  func parse(_ array: [UInt8], iterations: Int) throws -> Double {
    try measure("large-array", iterations: iterations) { try JSONParser.parse(array).arrayValue?.count ?? 0 }
  }
  var largeParse = Double.infinity, twiceParse = Double.infinity
  for _ in 0..<5 {
    largeParse = min(largeParse, try parse(large, iterations: 10))
    twiceParse = min(twiceParse, try parse(twice, iterations: 5))
  }
  print("json.tipsjson_parse_and_reply_us: \(String(format: "%.3f", tips))")
  print("json.tipsjson_full_parse_and_reply_us: \(String(format: "%.3f", full))")
  print("json.tipsd_donate_decode_and_reply_us: \(String(format: "%.3f", donate))")
  print("json.plain_request_scan_us: \(String(format: "%.3f", scan))")
  print("json.foundation_serialization_parse_and_reply_us: \(String(format: "%.3f", serialization))")
  print("json.foundation_codable_parse_and_reply_us: \(String(format: "%.3f", codable))")
  print("json.speedup_vs_serialization: \(String(format: "%.1f", serialization / tips))")
  print("json.speedup_vs_codable: \(String(format: "%.1f", codable / tips))")
  print("json.large_array_200k_parse_ms: \(String(format: "%.2f", largeParse / 1000))")
  print("json.large_array_400k_vs_200k_ratio: \(String(format: "%.2f", twiceParse / largeParse))")
}
