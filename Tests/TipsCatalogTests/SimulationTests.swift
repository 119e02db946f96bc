import Testing
import TipsCatalog
import TipsEngine
import TipsJSON

@Suite struct Simulations {
  /// The demo catalog, reasoned from its rules (displayFrequency immediate, so no cooldown):
  ///
  /// - fresh install (nothing donated, isLoggedIn false): only `welcome.tour` holds — `tour.finished` count 0 and
  ///   `tour.skipped` count 0 within 30 days; every other tip needs a donation.
  /// - already qualified: search.opened ×3 (filter.tip's gte 3), search.performed ×3, map.opened ×2 (rotate-map's
  ///   gte 2); filter.used, tour.finished and tour.skipped are only counted with eq, so never donated.
  ///   `filter.tip` holds (3 ≥ 3, filter.used 0, 1 today); `advanced-search.tip` still needs isLoggedIn;
  ///   `show-location.tip` holds and is the compass group's current tip; `rotate-map.tip` holds but the ordered
  ///   group shows it only after show-location.tip is invalidated.
  @Test func demoCatalog() throws {
    let report = CatalogLoader.load(
      path: Paths.demo, messagesDirectory: Paths.demoMessages, options: LintOptions(simulate: true))
    let simulation = try #require(report.simulation)
    #expect(simulation.tipCount == 5)
    #expect(simulation.freshInstall == ["welcome.tour"])
    #expect(simulation.alreadyQualified == ["welcome.tour", "filter.tip", "show-location.tip"])
    #expect(simulation.neverShows == ["advanced-search.tip", "rotate-map.tip"])
    let text = report.rendered(.text)
    #expect(text.contains("fresh install: 1 of 5 show: welcome.tour\n"))
    #expect(text.contains("already qualified: 3 of 5 show: welcome.tour, filter.tip, show-location.tip\n"))
    #expect(text.contains("never shows: advanced-search.tip, rotate-map.tip\n"))
    let json = try JSONParser.parse(report.rendered(.json))
    #expect(json["simulation"]?["alreadyQualified"] == ["welcome.tour", "filter.tip", "show-location.tip"])
  }

  /// Donations carry what `where` asks for and one value for `largestGroupBy`, so one group holds them all.
  @Test func qualifyingDonationsMeetWhereAndGroupBy() throws {
    let report = try lint(
      """
      {"events": [{"id": "trail.visited", "description": "T"}],
       "tips": [
         {"id": "north.tip", "title": "N", "removal": "r", "sync": "local",
          "rules": [{"event": "trail.visited", "where": {"region": "north"}, "within": {"days": 1}, "count": {"gt": 3}}]},
         {"id": "regular.tip", "title": "R", "removal": "r", "sync": "local",
          "rules": [{"event": "trail.visited", "largestGroupBy": "trailId", "within": {"days": 1}, "count": {"gte": 2}}]}
       ]}
      """, options: LintOptions(simulate: true))
    let simulation = try #require(report.simulation)
    #expect(simulation.freshInstall.isEmpty)
    #expect(simulation.alreadyQualified == ["north.tip", "regular.tip"])
  }

  @Test func noSimulationWithErrors() throws {
    let report = CatalogLoader.load(path: Paths.fixture("decode-fail.json"), options: LintOptions(simulate: true))
    #expect(report.simulation == nil)
  }
}
