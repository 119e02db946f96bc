import Testing
import TipsJSON

@testable import TipsLanguageServer

@Suite struct RuleWordsTests {
  func words(_ text: String) throws -> String { RuleWords.sentence(try JSONParser.parse(Array(text.utf8))) }

  @Test func eventRules() throws {
    #expect(
      try words(#"{"event": "search.opened", "within": {"days": 1}, "count": {"gte": 3}}"#)
        == "Holds when `search.opened` was donated at least 3 times within the last 1 day.")
    #expect(try words(#"{"event": "a.b", "count": {"gte": 1}}"#) == "Holds when `a.b` was donated at least once.")
    #expect(try words(#"{"event": "a.b", "count": {"eq": 0}}"#) == "Holds when `a.b` was never donated.")
    #expect(
      try words(#"{"event": "a.b", "within": {"hours": 2.5}, "count": {"lt": 4}}"#)
        == "Holds when `a.b` was donated fewer than 4 times within the last 2.5 hours.")
    #expect(
      try words(
        #"{"event": "trail.visited", "where": {"region": "north"}, "largestGroupBy": "trailId", "count": {"gt": 2}}"#)
        == "Holds when `trail.visited` was donated more than 2 times with `region` = `\"north\"` with the same "
        + "`trailId` (its largest group by `trailId`).")
  }

  @Test func parametersCombinationsAndIncompleteRules() throws {
    #expect(try words(#"{"parameter": "step", "gte": 2}"#) == "Holds when parameter `step` is at least `2`.")
    #expect(
      try words(#"{"allOf": [{"event": "a.b", "count": {"gte": 1}}, {"anyOf": [{"parameter": "p", "eq": true}]}]}"#)
        == "Holds when all of these hold:\n- `a.b` was donated at least once\n- any of these holds:\n  - parameter `p` is `true`"
    )
    #expect(
      try words(#"{"not": {"event": "a.b", "count": {"gte": 1}}}"#) == "Holds unless `a.b` was donated at least once.")
    #expect(
      try words(#"{"event": "a.b"}"#)
        == "Holds when `a.b` was donated (no `count` yet: it needs one of eq, ne, lt, lte, gt, gte).")
    #expect(
      try words("{}") == "An incomplete rule: it needs one of `event`, `parameter`, `tip`, `allOf`, `anyOf` or `not`.")
  }

  @Test func tipsThatFollowTips() throws {
    #expect(
      try words(#"{"tip": "welcome.tip", "status": "invalidated", "for": {"days": 1}}"#)
        == "Holds when `welcome.tip` was invalidated at least 1 day ago (a tip that is not registered never counts).")
    #expect(
      try words(#"{"tip": "welcome.tip", "status": "invalidated"}"#)
        == "Holds when `welcome.tip` was invalidated (a tip that is not registered never counts).")
    #expect(try words(#"{"tip": "w", "displayed": {"gte": 2}}"#) == "Holds when `w` was displayed at least 2 times.")
    #expect(try words(#"{"tip": "w", "displayed": {"eq": 0}}"#) == "Holds when `w` was never displayed.")
    #expect(
      try words(#"{"not": {"tip": "w", "status": "invalidated", "for": {"hours": 2}}}"#).hasPrefix(
        "Holds unless `w` was invalidated at least 2 hours ago"))
  }
}
