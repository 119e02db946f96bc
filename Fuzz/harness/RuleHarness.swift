// fuzz-target: rule
// Fuzzes TipsEngine's definition decoders (Rule, TipDefinition, ParameterDefinition): no crash, and a decoded
// value re-encoded with `.json` decodes to an equal value.
import TipsEngine
import TipsJSON

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  guard let json = try? JSONParser.parse(UnsafeRawBufferPointer(start: data, count: size), maxDepth: 64) else { return 0 }
  if let rule = try? Rule(json: json, path: "rule") {
    let again = try? Rule(json: rule.json, path: "rule")
    fuzzCheck(again == rule, "Rule round trip: \(json.jsonString) -> \(rule.json.jsonString)")
  }
  if let tip = try? TipDefinition(json: json, path: "tips[0]") {
    let again = try? TipDefinition(json: tip.json, path: "tips[0]")
    fuzzCheck(again == tip, "TipDefinition round trip: \(json.jsonString) -> \(tip.json.jsonString)")
  }
  if let parameter = try? ParameterDefinition(json: json, path: "parameters[0]") {
    _ = parameter
  }
  // Errors carry a path and a message; rendering them must not crash either.
  do { _ = try Rule(json: json, path: "rule") } catch { _ = "\(error)" }
  return 0
}
