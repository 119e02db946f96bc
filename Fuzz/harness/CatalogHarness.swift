// fuzz-target: catalog
// Fuzzes the catalog loader: TipsCatalog's `Catalog(json:)` (events, locales, templates and all), then applied to a
// fresh engine like `tipsd serve --catalog` does, and a template instantiated with its sample values.
import TipsCatalog
import TipsEngine
import TipsJSON

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
  for template in catalog.templates {
    var values = JSONObject()
    for name in template.placeholders { values[name] = .string(name) }
    _ = try? template.instantiate(values: values, idPattern: .any)
  }
  return 0
}
