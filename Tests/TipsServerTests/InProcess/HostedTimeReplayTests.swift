import Testing
import TipsJSON
import TipsTestSupport

@testable import TipsServer

/// Hosted mode (#45): an account no node held while one of its instants passed is loaded as of its last operation,
/// then time replays to now, so its history records the change at the instant it happened.
@Suite(.enabled(if: PyJWTMint.available, "needs python3 with PyJWT (make deps-pip)"))
struct HostedTimeReplayTests {
  @Test func anAccountLoadedAfterItsWindowClosedRecordsTheChangeAtItsInstant() throws {
    let node = try HostedTestServer { $0.maxResidentAccounts = 1 }
    let tokens = try node.tokens(["erin", "passing"], lifetime: 30 * 86_400)
    let erin = try node.connect(token: tokens["erin"])
    let start = node.server.clock.now()
    for _ in 0..<3 { try erin.result("events/donate", ["id": "search.opened"]) }
    #expect(try erin.result("tips/status", ["ids": ["filter.tip"]])["tips"]?[0]?["shouldDisplay"] == true)
    erin.stream.peerClose()
    node.loop.run()
    let passing = try node.connect(token: tokens["passing"])
    try passing.result("tips/status", [:])
    passing.stream.peerClose()
    node.loop.run()
    #expect(!node.hosted.isResident("erin"))
    // A day and a minute later: filter.tip's one-day window of search.opened closed while no node held erin.
    node.loop.advance(seconds: 86_460)
    let again = try node.connect(token: tokens["erin"])
    #expect(try again.result("tips/status", ["ids": ["filter.tip"]])["tips"]?[0]?["shouldDisplay"] == false)
    let events = try again.result("analytics/read")["events"]?.arrayValue ?? []
    let closed = events.filter {
      $0["type"] == "eligibility" && $0["tipId"] == "filter.tip" && $0["shouldDisplay"] == false
    }
    #expect(closed.last?["at"]?.doubleValue == start + 86_400, "\(events)")
  }
}
