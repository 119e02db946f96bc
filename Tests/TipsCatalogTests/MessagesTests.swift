import Foundation
import Testing
import TipsCatalog
import TipsEngine
import TipsJSON

@Suite struct Messages {
  static let catalog = """
    {"locales": ["en", "ja", "ko"], "events": [{"id": "a.opened", "description": "A"}],
     "tips": [
       {"id": "a.tip", "title": "A", "message": "Inline message",
        "actions": [{"id": "go", "title": "Go"}, {"id": "later", "title": "Later"}],
        "variants": {"short": {"title": "A!", "message": "Short message"}},
        "localizations": {"ja": {"title": "インライン", "message": "インラインのメッセージ"}},
        "removal": "r", "sync": "local", "rules": [{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}]},
       {"id": "a.tip.more", "title": "More", "removal": "r", "sync": "local",
        "rules": [{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}]}
     ]}
    """

  func load(_ messages: [String: String]) throws -> (Catalog, CatalogReport) {
    let directory = try writeFiles(
      ["catalog.json": Self.catalog].merging(messages.map { ("messages/\($0.key).json", $0.value) }) { a, _ in a })
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.createDirectory(atPath: "\(directory)/messages", withIntermediateDirectories: true)
    let catalog = try Catalog(path: "\(directory)/catalog.json", messagesDirectory: "\(directory)/messages")
    let report = CatalogLoader.load(path: "\(directory)/catalog.json", messagesDirectory: "\(directory)/messages")
    return (catalog, report)
  }

  /// A file's key beats the inline localization of its locale; what the file lacks stays inline; the source
  /// locale's file replaces the tip's own copy.
  @Test func mergePrecedence() throws {
    let (catalog, _) = try load([
      "ja": #"{"tipkit": {"a.tip.title": "ファイル", "a.tip.actions.go": "行く"}}"#,
      "en": #"{"tipkit": {"a.tip.title": "A from the file", "a.tip.variants.short.message": "Shorter"}}"#,
    ])
    let tip = try #require(catalog.tips.first)
    #expect(tip.localizations["ja"]?.title == "ファイル")
    #expect(tip.localizations["ja"]?.message == "インラインのメッセージ")
    #expect(tip.localizations["ja"]?.actionTitles == ["go": "行く"])
    #expect(tip.title == "A from the file")
    #expect(tip.message == "Inline message")
    #expect(tip.variant("short")?.message == "Shorter")
    // Applying another set starts again from the catalog's own copy.
    let reapplied = catalog.applying(MessageCatalog())
    #expect(reapplied.tips.first?.title == "A")
    #expect(reapplied.tips.first?.localizations["ja"]?.title == "インライン")
  }

  /// `{"tipkit": {...}}` and top-level `"tipkit.…"` keys are both read; the app's own keys are ignored.
  @Test func nestedAndFlatKeys() throws {
    let (catalog, report) = try load([
      "ko":
        #"{"home": {"greeting": "안녕"}, "tipkit": {"a.tip.title": "에이"}, "tipkit.a.tip.message": "메시지", "other.key": 1}"#
    ])
    let tip = try #require(catalog.tips.first)
    #expect(tip.localizations["ko"]?.title == "에이")
    #expect(tip.localizations["ko"]?.message == "메시지")
    #expect(report.of(.messages).isEmpty)
    #expect(report.of(.extraMessageKey).isEmpty)
    let file = try MessageCatalog.parse(
      Array(#"{"tipkit.x.title": "flat", "tipkit": {"x.title": "nested"}}"#.utf8), locale: "ja", path: "ja.json")
    #expect(file.entries.map { $0.key } == ["x.title"])
    #expect(file["x.title"] == "nested")
    #expect(throws: CatalogError.self) {
      try MessageCatalog.parse(Array(#"{"tipkit": {"x.title": 3}}"#.utf8), locale: "ja", path: "ja.json")
    }
  }

  /// Tip ids hold dots: a key belongs to the longest tip id that prefixes it.
  @Test func longestTipIDPrefixWins() throws {
    let (catalog, report) = try load([
      "ja":
        #"{"tipkit": {"a.tip.more.title": "もっと", "a.tip.title": "エー", "a.tip.more.actions.go": "x", "a.tip.variants.long.title": "x", "a.tip.actions.nope": "x", "b.tip.title": "x"}}"#
    ])
    #expect(catalog.tips[1].localizations["ja"]?.title == "もっと")
    #expect(catalog.tips[0].localizations["ja"]?.title == "エー")
    // "a.tip.more.actions.go" names a.tip.more, which has no action "go" (a.tip's go is not taken instead).
    #expect(catalog.tips[0].localizations["ja"]?.actionTitles["go"] == nil)
    let extra = report.of(.extraMessageKey).map { $0.path }
    #expect(
      extra == [
        "tipkit.a.tip.more.actions.go", "tipkit.a.tip.variants.long.title", "tipkit.a.tip.actions.nope",
        "tipkit.b.tip.title",
      ])
  }

  /// Every missing key, per locale, not just the first.
  @Test func everyMissingKeyIsReportedPerLocale() throws {
    let (_, bare) = try load([:])
    let expected = [
      "tips[0].title", "tips[0].message", "tips[0].actions[0].title", "tips[0].actions[1].title",
      "tips[0].variants.short.title", "tips[0].variants.short.message", "tips[1].title",
    ]
    let missing = bare.of(.missingCopy)
    // ja has an inline title and message for a.tip.
    #expect(
      Set(missing.filter { $0.message.contains("no ja copy") }.map { $0.path })
        == Set(expected.filter { $0 != "tips[0].title" && $0 != "tips[0].message" }))
    #expect(Set(missing.filter { $0.message.contains("no ko copy") }.map { $0.path }) == Set(expected))
    #expect(missing.count == 5 + 7)
    #expect(missing.allSatisfy { $0.line != nil })
    #expect(missing.contains { $0.message.contains("tipkit.a.tip.variants.short.message") })

    let (_, partial) = try load([
      "ko":
        #"{"tipkit": {"a.tip.title": "에이", "a.tip.message": "메시지", "a.tip.actions.go": "가기", "a.tip.actions.later": "나중에", "a.tip.variants.short.title": "에이!", "a.tip.variants.short.message": "짧게", "a.tip.more.title": "더"}}"#,
      "ja": #"{"tipkit": {"a.tip.actions.go": "行く"}}"#,
    ])
    #expect(
      Set(partial.of(.missingCopy).map { $0.path })
        == [
          "tips[0].actions[1].title", "tips[0].variants.short.title", "tips[0].variants.short.message", "tips[1].title",
        ])
    #expect(partial.of(.missingCopy).allSatisfy { $0.message.contains("no ja copy") })
  }

  @Test func fileForAnUndeclaredLocaleIsAWarning() throws {
    let (_, report) = try load(["fr": #"{"tipkit": {"a.tip.title": "Un"}}"#])
    #expect(report.of(.extraLocale).map { $0.file.hasSuffix("/fr.json") } == [true])
  }

  @Test func templateCopyMustUseTheTemplatesPlaceholders() throws {
    let report = try lint(
      """
      {"locales": ["en", "ja"], \(declaredEvents),
       "templates": [{"id": "trail.new.{trailId}", "title": "New: {trailName}", "removal": "r", "sync": "local",
                      "rules": [{"event": "a.opened", "within": {"days": 1}, "count": {"gte": 1}}]}]}
      """,
      messages: ["ja": #"{"tipkit": {"trail.new.{trailId}.title": "新着: {trailNmae}"}}"#])
    let problem = try #require(report.of(.template).first)
    #expect(problem.path == "tipkit.trail.new.{trailId}.title")
    #expect(problem.message.contains("{trailNmae}"))
    #expect(problem.file.hasSuffix("/ja.json"))
  }

  /// In-memory message files (an editor's unsaved buffers, `tipsd lsp`) stand in for the files of those names, on
  /// disk or not.
  @Test func inMemoryMessageFilesStandInForTheDisk() throws {
    let directory = try writeFiles([
      "catalog.json": Self.catalog, "messages/ja.json": #"{"tipkit": {"a.tip.nonsense": "x"}}"#,
    ])
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let bytes = Array(Self.catalog.utf8)
    let onDisk = CatalogLoader.check(
      bytes: bytes, file: "\(directory)/catalog.json", messagesDirectory: "\(directory)/messages")
    #expect(onDisk.of(.extraMessageKey).map(\.path) == ["tipkit.a.tip.nonsense"])
    let buffers = CatalogLoader.check(
      bytes: bytes, file: "\(directory)/catalog.json", messagesDirectory: "\(directory)/messages",
      messageFiles: ["ja.json": Array(#"{"tipkit": {"a.tip.title": "エー"}}"#.utf8), "ko.json": Array("{oops".utf8)])
    #expect(buffers.of(.extraMessageKey).isEmpty)
    #expect(buffers.of(.json).map(\.file) == ["\(directory)/messages/ko.json"])
  }
}
