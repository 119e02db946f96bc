// fuzz-target: xliff
// Fuzzes the XLIFF reader `tipsd strings import --format xliff` runs on translators' files: TipsCatalog's
// XMLReader (a pure XML parser: no DOCTYPE, no entities but the predefined five) and XLIFF.read. Oracle: no crash;
// the translations read, written again with XLIFF.file (when XML can carry them), read back as the same keys and
// values.
import TipsCatalog

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  _ = try? XMLReader.parse(bytes)
  guard let (locales, notices) = try? XLIFF.read(bytes, file: "fuzz.xliff") else { return 0 }
  _ = notices.map { "\($0.file) \($0.key) \($0.message)" }
  for locale in locales {
    let units = locale.entries.map { (key: $0.key, source: $0.value, target: Optional($0.value)) }
    guard let written = try? XLIFF.file(sourceLocale: "en", locale: locale.locale, units: units) else { continue }
    let again = try? XLIFF.read(written, file: "again.xliff")
    fuzzCheck(again != nil, "the writer's own file does not read back")
    let entries = again?.0.first?.entries ?? []
    fuzzCheck(entries.map(\.key) == locale.entries.map(\.key), "keys differ after a round trip")
    fuzzCheck(entries.map(\.value) == locale.entries.map(\.value), "values differ after a round trip")
  }
  return 0
}
