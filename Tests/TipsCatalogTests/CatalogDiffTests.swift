import Testing
import TipsCatalog
import TipsJSON

/// `catalogs/diff`'s comparison (#48): what changed between two catalogs, tip by tip.
@Suite struct CatalogDiffTests {
  func catalog(_ text: String) throws -> Catalog { try Catalog(json: try JSONParser.parse(text)) }

  @Test func identicalCatalogsDifferInNothing() throws {
    let demo = try Catalog(path: Paths.demo, messagesDirectory: Paths.demoMessages)
    let diff = CatalogDiff(from: demo, to: demo)
    #expect(diff.isEmpty)
    #expect(diff.changed.isEmpty && diff.added.isEmpty && diff.removed.isEmpty && diff.others.isEmpty)
  }

  @Test func tipsAddedRemovedAndChangedByKind() throws {
    let old = try catalog(
      #"""
      {"tips": [
        {"id": "a.tip", "title": "A", "rules": [{"event": "x.opened", "count": {"gte": 1}}]},
        {"id": "b.tip", "title": "B"},
        {"id": "c.tip", "title": "C", "variants": {"one": {"title": "C1"}, "two": {"title": "C2"}}},
        {"id": "d.tip", "title": "D"},
        {"id": "e.tip", "title": "E", "options": {"maxDisplayCount": 1}}
      ]}
      """#)
    let new = try catalog(
      #"""
      {"tips": [
        {"id": "a.tip", "title": "A", "rules": [{"event": "x.opened", "count": {"gte": 2}}]},
        {"id": "c.tip", "title": "C", "variants": {"one": {"title": "C1"}, "two": {"title": "C3"}}},
        {"id": "d.tip", "title": "D, now", "message": "more"},
        {"id": "e.tip", "title": "E", "options": {"maxDisplayCount": 2}},
        {"id": "f.tip", "title": "F"}
      ]}
      """#)
    let diff = CatalogDiff(from: old, to: new)
    #expect(diff.added == ["f.tip"])
    #expect(diff.removed == ["b.tip"])
    #expect(
      diff.changed == [
        .init(id: "a.tip", rules: true, copy: false, variants: false, other: false),
        .init(id: "c.tip", rules: false, copy: false, variants: true, other: false),
        .init(id: "d.tip", rules: false, copy: true, variants: false, other: false),
        .init(id: "e.tip", rules: false, copy: false, variants: false, other: true),
      ])
    #expect(!diff.isEmpty)
    // The other way round, added and removed swap and the same tips changed.
    let back = CatalogDiff(from: new, to: old)
    #expect(back.added == ["b.tip"] && back.removed == ["f.tip"])
    #expect(back.changed.map(\.id) == ["a.tip", "c.tip", "d.tip", "e.tip"])
  }

  @Test func localizationsAreCopyAndGroupsParametersFrequencyAreOthers() throws {
    let old = try catalog(
      #"""
      {"displayFrequency": "daily", "parameters": [{"id": "isPro", "default": false}],
       "tips": [{"id": "a.tip", "title": "A"}, {"id": "b.tip", "title": "B"}],
       "groups": [{"id": "g", "priority": "ordered", "tips": ["a.tip", "b.tip"]}]}
      """#)
    let new = try catalog(
      #"""
      {"displayFrequency": "weekly", "parameters": [{"id": "isPro", "default": true}],
       "tips": [{"id": "a.tip", "title": "A", "localizations": {"ja": {"title": "エー"}}}, {"id": "b.tip", "title": "B"}],
       "groups": [{"id": "g", "priority": "ordered", "tips": ["b.tip", "a.tip"]}]}
      """#)
    let diff = CatalogDiff(from: old, to: new)
    #expect(diff.changed == [.init(id: "a.tip", rules: false, copy: true, variants: false, other: false)])
    #expect(diff.others == ["group g", "parameter isPro"])
    #expect(diff.displayFrequency)
  }
}
