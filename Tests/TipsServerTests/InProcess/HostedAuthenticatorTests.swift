import Testing
import TipsAuth
import TipsJSON
import TipsTestSupport

@testable import TipsServer

/// An ``Authenticator`` that names principals without tokens (#44): `user:<account>` signs that account in, anything
/// else is refused as a bad signature. Hosted logic tested in process with it needs no PyJWT.
struct Principals: Authenticator {
  var maxTokenBytes: Int { 8_192 }

  func verify(
    _ token: String, now: Double, beforeSignature: TokenVerifier.BeforeSignature?
  ) -> Result<VerifiedToken, AuthError> {
    guard token.hasPrefix("user:"), token.count > 5 else {
      return .failure(AuthError(.badSignature, "not a test principal"))
    }
    let verified = VerifiedToken(subject: String(token.dropFirst(5)), expiresAt: now + 3_600, issuedAt: now - 1)
    if let refusal = beforeSignature?(verified) { return .failure(refusal) }
    return .success(verified)
  }
}

/// Hosted mode in process with principals handed in (no PyJWT): accounts kept apart, a user confined to its own
/// account, an idempotency key answered once.
@Suite struct HostedAuthenticatorTests {
  func node() throws -> HostedTestServer { try HostedTestServer { $0.authenticator = Principals() } }

  func count(_ client: EmbeddedClient, _ event: String) throws -> Int64 {
    let state = try client.result("inspect/state", [:])
    return state["events"]?.arrayValue?.first { $0["id"]?.stringValue == event }?["count"]?.intValue ?? 0
  }

  @Test func twoAccountsOnOneNodeNeverSeeEachOther() throws {
    let node = try node()
    let alice = try node.connect(token: "user:alice")
    let bob = try node.connect(token: "user:bob")
    try bob.result("tips/observe", ["ids": ["welcome.tour"]])
    let bobBefore = try bob.result("tips/status", ["ids": ["welcome.tour"]])
    _ = bob.takeShouldDisplay()
    try alice.result("tips/observe", ["ids": ["welcome.tour"]])
    _ = alice.takeShouldDisplay()
    try alice.result("events/donate", ["id": "search.opened"])
    try alice.result("events/donate", ["id": "search.opened"])
    try alice.result("tips/invalidate", ["id": "welcome.tour", "reason": "tipClosed"])
    try bob.flush()
    #expect(try count(alice, "search.opened") == 2)
    #expect(try count(bob, "search.opened") == 0)
    #expect(try bob.result("tips/status", ["ids": ["welcome.tour"]]) == bobBefore)
    #expect(bob.takeShouldDisplay().isEmpty)
    let aliceStatus = try alice.result("tips/status", ["ids": ["welcome.tour"]])
    #expect(aliceStatus["tips"]?[0]?["status"]?.stringValue == "invalidated")
    #expect(node.hosted.isResident("alice") && node.hosted.isResident("bob"))
  }

  @Test func aUserActsOnItsOwnAccountOnly() throws {
    let node = try node()
    let alice = try node.connect(token: "user:alice")
    let bob = try node.connect(token: "user:bob")
    let refusal = try alice.refusal("events/donate", ["id": "search.opened", "account": "bob"])
    #expect(refusal.code.rawValue == -32014)
    #expect(try count(bob, "search.opened") == 0)
    #expect(try alice.refusal("accounts/list", [:]).code.rawValue == -32014)
    let stranger = try node.server.connect(initialize: false)
    #expect(try stranger.refusal("initialize", HostedTestServer.initialize(token: "forged")).code.rawValue == -32013)
  }

  @Test func aChangeWithAKeyIsMadeOnceAndAnsweredAlike() throws {
    let node = try node()
    let carol = try node.connect(token: "user:carol")
    let first = try carol.result("events/donate", ["id": "search.opened", "idempotencyKey": "k1"])
    #expect(try carol.result("events/donate", ["id": "search.opened", "idempotencyKey": "k1"]) == first)
    #expect(try count(carol, "search.opened") == 1)
    // The key belongs to carol's account: the same key on another account is another change.
    let dan = try node.connect(token: "user:dan")
    try dan.result("events/donate", ["id": "search.opened", "idempotencyKey": "k1"])
    #expect(try count(dan, "search.opened") == 1 && count(carol, "search.opened") == 1)
  }
}
