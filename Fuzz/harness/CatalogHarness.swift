// Fuzzes the catalog loader: TipsServer's (internal) `Catalog`, compiled into this harness from
// Sources/TipsServer/Catalog.swift, then applied to a fresh engine like `tipsd serve --catalog` does.
import TipsEngine
import TipsJSON

/// Stand-in for TipsServer's ServerError (Catalog.swift throws it).
struct ServerError: Error, CustomStringConvertible {
  var message: String
  init(_ message: String) { self.message = message }
  var description: String { message }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  guard let json = try? JSONParser.parse(UnsafeRawBufferPointer(start: data, count: size), maxDepth: 64) else { return 0 }
  let catalog: Catalog
  do {
    catalog = try Catalog(json: json)
  } catch {
    _ = "\(error)"
    return 0
  }
  let engine = Engine(clock: VirtualClock(now: 1_700_000_000))
  if let mutation = try? catalog.register(in: engine) {
    _ = mutation.writes.count
    for tip in catalog.tips { _ = engine.state(of: tip.id) }
    _ = try? engine.explain(catalog.tips.first?.id ?? "")
  }
  return 0
}
