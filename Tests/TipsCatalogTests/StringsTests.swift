import Foundation
import Testing
import TipsCatalog
import TipsJSON

/// The translators' files through the catalog's own API (`tipsd strings` itself is tested in TipsCommandsTests).
@Suite struct StringsRoundTrips {
  /// What `tipsd strings export` does.
  func export(_ catalog: String, messages: String?, format: StringsFormat, to out: String) throws {
    _ = try StringsExport.write(try Catalog(path: catalog, messagesDirectory: messages), format: format, to: out)
  }

  /// What `tipsd strings import` does.
  func importFiles(_ catalog: String, format: StringsFormat, from: String, messages: String) throws {
    let (locales, _) = try StringsImport.read(from: from, format: format)
    _ = try StringsImport.write(locales, catalog: try Catalog(path: catalog), to: messages)
  }

  /// Every file under `directory` (relative path → bytes).
  func contents(_ directory: String) throws -> [String: Data] {
    var files: [String: Data] = [:]
    let enumerator = FileManager.default.enumerator(atPath: directory)
    while let name = enumerator?.nextObject() as? String {
      var isDirectory: ObjCBool = false
      let path = "\(directory)/\(name)"
      if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
        files[name] = try Data(contentsOf: URL(fileURLWithPath: path))
      }
    }
    return files
  }

  @Test(arguments: StringsFormat.allCases) func exportImportExportIsByteStable(_ format: StringsFormat) throws {
    let base = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: base) }
    try export(Paths.demo, messages: Paths.demoMessages, format: format, to: "\(base)/first")
    let from = format == .xcstrings ? "\(base)/first/Tips.xcstrings" : "\(base)/first"
    try importFiles(Paths.demo, format: format, from: from, messages: "\(base)/messages")
    try export(Paths.demo, messages: "\(base)/messages", format: format, to: "\(base)/second")
    let first = try contents("\(base)/first")
    let second = try contents("\(base)/second")
    let expectedNames: Set<String> =
      switch format {
      case .json: ["en.json", "ja.json", "zh-Hans.json", "ko.json"]
      case .strings:
        ["en.lproj/Tips.strings", "ja.lproj/Tips.strings", "zh-Hans.lproj/Tips.strings", "ko.lproj/Tips.strings"]
      case .xcstrings: ["Tips.xcstrings"]
      }
    #expect(Set(first.keys) == expectedNames)
    #expect(first == second)
    // The imported message files are the demo's own, byte for byte.
    for locale in ["ja", "zh-Hans", "ko"] {
      let imported = try Data(contentsOf: URL(fileURLWithPath: "\(base)/messages/\(locale).json"))
      let original = try Data(contentsOf: URL(fileURLWithPath: "\(Paths.demoMessages)/\(locale).json"))
      #expect(imported == original, "\(format) \(locale)")
    }
  }

  @Test func exportedFormats() throws {
    let catalog = try Catalog(path: Paths.demo, messagesDirectory: Paths.demoMessages)
    let json = try #require(StringsExport.files(catalog, format: .json).first { $0.path == "ja.json" })
    let text = String(decoding: json.bytes, as: UTF8.self)
    #expect(text.hasPrefix("{\n  \"tipkit\": {\n    \"welcome.tour.title\": \"2分でわかるツアー\",\n"))
    #expect(text.hasSuffix("\"trail.new.{trailId}.actions.go\": \"今すぐ行く\"\n  }\n}\n"))
    let keys = StringsExport.keys(catalog)
    #expect(
      Array(keys.prefix(10)) == [
        "welcome.tour.title", "welcome.tour.message", "welcome.tour.actions.start", "filter.tip.title",
        "filter.tip.message", "filter.tip.actions.learn-more", "filter.tip.variants.friendly.title",
        "filter.tip.variants.friendly.message", "filter.tip.variants.direct.title",
        "filter.tip.variants.direct.message",
      ])
    let strings = try #require(
      StringsExport.files(catalog, format: .strings).first { $0.path == "en.lproj/Tips.strings" })
    #expect(
      String(decoding: strings.bytes, as: UTF8.self).contains(
        "\n\"tipkit.filter.tip.title\" = \"You can narrow this down\";\n"))
    let xcstrings = try #require(StringsExport.files(catalog, format: .xcstrings).first)
    let document = try JSONParser.parse(xcstrings.bytes)
    #expect(document["sourceLanguage"] == "en")
    #expect(document["version"] == "1.0")
    #expect(
      document["strings"]?["tipkit.filter.tip.title"]?["localizations"]?["ko"]?["stringUnit"]?["value"]
        == "결과를 좁힐 수 있어요")
    #expect(
      document["strings"]?["tipkit.filter.tip.title"]?["localizations"]?["ko"]?["stringUnit"]?["state"] == "translated")
  }

  /// Quotes, backslashes, newlines and tabs survive `.strings`; keys the catalog lacks are kept and reported;
  /// an existing message file keeps the app's own keys.
  @Test func escapingUnknownKeysAndAppKeys() throws {
    let base = try writeFiles([
      "catalog.json":
        #"{"locales": ["en", "ja"], "tips": [{"id": "a.tip", "title": "Say \"hi\"\n\tback\\slash {x}"}]}"#,
      "messages/ja.json": #"{"home": {"title": "ホーム"}, "tipkit": {"a.tip.title": "「やあ」\n\\"}, "zzz": 1}"#,
    ])
    defer { try? FileManager.default.removeItem(atPath: base) }
    let catalog = "\(base)/catalog.json"
    try export(catalog, messages: "\(base)/messages", format: .strings, to: "\(base)/out")
    let exported = try String(contentsOfFile: "\(base)/out/en.lproj/Tips.strings", encoding: .utf8)
    #expect(exported.contains(#""tipkit.a.tip.title" = "Say \"hi\"\n\tback\\slash {x}";"#))
    // A translator adds a key the catalog does not have.
    let ja = "\(base)/out/ja.lproj/Tips.strings"
    try
      (try String(contentsOfFile: ja, encoding: .utf8)
      + "// added\n\"tipkit.b.tip.title\" = \"ビー\";\n\"app.other\" = \"x\";\n")
      .write(toFile: ja, atomically: true, encoding: .utf8)
    let (locales, skipped) = try StringsImport.read(from: "\(base)/out", format: .strings)
    #expect(skipped.map { $0.key } == ["app.other"])
    let (written, kept) = try StringsImport.write(locales, catalog: try Catalog(path: catalog), to: "\(base)/messages")
    #expect(written.count == 2)
    #expect(kept.map { $0.key } == ["tipkit.b.tip.title"])
    let merged = try String(contentsOfFile: "\(base)/messages/ja.json", encoding: .utf8)
    #expect(
      merged == """
        {
          "home": {
            "title": "ホーム"
          },
          "tipkit": {
            "a.tip.title": "「やあ」\\n\\\\",
            "b.tip.title": "ビー"
          },
          "zzz": 1
        }

        """)
    let roundTripped = try Catalog(path: catalog, messagesDirectory: "\(base)/messages")
    #expect(roundTripped.tips[0].title == "Say \"hi\"\n\tback\\slash {x}")
    #expect(roundTripped.tips[0].localizations["ja"]?.title == "「やあ」\n\\")
  }

  @Test func stringsFilesInUTF16AndWithComments() throws {
    let text = "/* c */ \"tipkit.a.tip.title\" /* x */ = \"\\U00e9t\\u00E9\"; // end\nunquoted.key = value;\n"
    var bytes: [UInt8] = [0xFF, 0xFE]
    for unit in text.utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
    let base = try writeFiles([:])
    defer { try? FileManager.default.removeItem(atPath: base) }
    try FileManager.default.createDirectory(atPath: "\(base)/fr.lproj", withIntermediateDirectories: true)
    try Data(bytes).write(to: URL(fileURLWithPath: "\(base)/fr.lproj/Tips.strings"))
    let (locales, skipped) = try StringsImport.read(from: base, format: .strings)
    #expect(locales.first?.locale == "fr")
    #expect(locales.first?.entries.map { $0.value } == ["été"])
    #expect(skipped.map { $0.key } == ["unquoted.key"])
  }
}
