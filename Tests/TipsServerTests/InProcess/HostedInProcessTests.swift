import Foundation
import Testing
import TipsJSON
import TipsTestSupport
import TipsTransport

@testable import TipsHosted
@testable import TipsServer

/// Hosted mode in-process: a node on the embedded loop with every account in memory (`--hosted memory:`,
/// ``MemoryHostedStore``), tokens minted by PyJWT. What the Python suites check against PostgreSQL, here with manual
/// time and nothing asynchronous left after `loop.run()`: signing in, the turn's commit, the node's account state
/// (`HostedNode`).
final class HostedTestServer {
  static let audience = "in-process"
  static let issuer = "https://issuer.test/"
  static let adminToken = String(repeating: "ad", count: 32)
  let secret = "in-process secret, at least thirty-two bytes long"
  let directory = temporaryDirectory()
  let server: TestServer

  init(_ configure: (inout HostedConfiguration) -> Void = { _ in }) throws {
    let secretFile = directory + "/secret"
    let adminFile = directory + "/admin"
    FileManager.default.createFile(atPath: secretFile, contents: Data((secret + "\n").utf8))
    FileManager.default.createFile(atPath: adminFile, contents: Data((Self.adminToken + "\n").utf8))
    chmod(secretFile, 0o600)
    chmod(adminFile, 0o600)
    let catalog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("catalog/demo.json").path
    server = try TestServer { configuration in
      var hosted = HostedConfiguration(server: HostedConfiguration.memory, node: "in-process")
      hosted.jwtSecretFile = secretFile
      hosted.audiences = [Self.audience]
      hosted.issuer = Self.issuer
      hosted.adminTokenFile = adminFile
      configure(&hosted)
      configuration.hosted = hosted
      configuration.catalogPath = catalog
      configuration.messagesDirectory =
        URL(fileURLWithPath: catalog).deletingLastPathComponent()
        .appendingPathComponent("messages").path
    }
  }

  deinit { try? FileManager.default.removeItem(atPath: directory) }

  var hosted: HostedService { server.server.services.hosted! }
  var store: MemoryHostedStore { hosted.store as! MemoryHostedStore }
  var loop: EmbeddedEventLoop { server.loop }

  func tokens(_ subjects: [String], lifetime: Double = 3600) throws -> [String: String] {
    try PyJWTMint.tokens(
      subjects, secret: secret, audience: Self.audience, issuer: Self.issuer, lifetime: lifetime)
  }

  /// A connection, signed in with `token` (nil: not signed in).
  func connect(token: String?) throws -> EmbeddedClient {
    let client = try server.connect(initialize: false)
    if let token { try client.result("initialize", Self.initialize(token: token)) }
    return client
  }

  static func initialize(token: String?) -> JSONValue {
    var params: JSONObject = ["protocolVersion": "1.3", "clientInfo": ["name": "in-process"]]
    if let token { params["auth"] = ["token": .string(token)] }
    return .object(params)
  }
}

@Suite(.enabled(if: PyJWTMint.available, "needs python3 with PyJWT (make deps-pip)"))
struct HostedInProcessTests {
  /// A batch that signs in and then acts: every request answered in one array, the asynchronous ones (PostgreSQL
  /// reads) included; before #33 the node trapped on the second message.
  @Test func aBatchThatSignsInAndActsIsAnsweredWhole() throws {
    let node = try HostedTestServer()
    let token = try node.tokens(["alice"])["alice"]!
    let client = try node.connect(token: nil)
    client.send([
      ["jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HostedTestServer.initialize(token: token)],
      ["jsonrpc": "2.0", "id": 2, "method": "tips/status", "params": ["ids": ["filter.tip"]]],
      ["jsonrpc": "2.0", "id": 3, "method": "events/donate", "params": ["id": "search.opened"]],
      ["jsonrpc": "2.0", "id": 4, "method": "analytics/read", "params": [:]],
      ["jsonrpc": "2.0", "id": 5, "method": "metrics/get", "params": [:]],
    ])
    try client.flush()
    let replies = client.takeAll()
    #expect(replies.count == 1)
    let parts = replies.first?.arrayValue ?? []
    #expect(parts.compactMap { $0["id"]?.intValue }.sorted() == [1, 2, 3, 4, 5])
    #expect(parts.allSatisfy { $0["result"] != nil }, "\(parts.map(\.jsonString))")
  }

  /// One session, one account: another account's token is refused (subjectChanged), the session keeps its own.
  @Test func aSessionSignsInOneAccountForItsLife() throws {
    let node = try HostedTestServer()
    let tokens = try node.tokens(["alice", "bob"])
    let client = try node.connect(token: tokens["alice"])
    let refusal = try client.refusal("auth/refresh", ["token": .string(tokens["bob"]!)])
    #expect(refusal.code.rawValue == -32013 && refusal.data?["reason"]?.stringValue == "subjectChanged")
    let refreshed = try client.result("auth/refresh", ["token": .string(tokens["alice"]!)])
    #expect(refreshed["account"]?.stringValue == "alice")
    // The admin token on a user's session is refused too.
    let admin = try client.refusal("auth/refresh", ["token": .string(HostedTestServer.adminToken)])
    #expect(admin.data?["reason"]?.stringValue == "subjectChanged")
  }

  /// A connection that does not sign in within --sign-in-timeout is closed, saying why.
  @Test func aConnectionThatDoesNotSignInIsClosed() throws {
    let node = try HostedTestServer { $0.signInTimeout = 5 }
    let idle = try node.connect(token: nil)
    node.loop.advance(seconds: 4)
    try idle.flush()
    #expect(!idle.stream.hasClosed)
    node.loop.advance(seconds: 2)
    try idle.flush()
    #expect(idle.stream.hasClosed)
    #expect(idle.takeAll().first?["error"]?["data"]?["reason"]?.stringValue == "signInTimeout")
  }

  /// The third failed sign-in closes the connection, after its reply.
  @Test func repeatedFailedSignInsCloseTheConnection() throws {
    let node = try HostedTestServer()
    let client = try node.connect(token: nil)
    for attempt in 1...3 {
      let refusal = try client.refusal("initialize", HostedTestServer.initialize(token: "not.a.token\(attempt)"))
      #expect(refusal.code.rawValue == -32013)
    }
    #expect(client.stream.hasClosed)
  }

  /// The turn's commit: a change PostgreSQL did not store is not acknowledged (-32016), the account is read back
  /// (the change is gone), and a retry is stored.
  @Test func aFailedCommitAcknowledgesNothing() throws {
    let node = try HostedTestServer()
    let client = try node.connect(token: try node.tokens(["carol"])["carol"])
    try client.result("events/donate", ["id": "search.opened"])
    node.store.failNextCommits = 1
    let refusal = try client.refusal("events/donate", ["id": "search.opened"])
    #expect(refusal.code.rawValue == -32016)
    let state = try client.result("inspect/state", [:])
    let searches = state["events"]?.arrayValue?.first { $0["id"]?.stringValue == "search.opened" }
    #expect(searches?["count"]?.intValue == 1)
    #expect(try client.result("events/donate", ["id": "search.opened"])["count"]?.intValue == 2)
  }

  /// A failed commit leaves no trace in the history: the reload starts its recorder from what the last successful
  /// commit stored, so moving the tip back (the invalidation PostgreSQL never stored) is no eligibility change.
  @Test func aFailedCommitRecordsNothingInTheHistory() throws {
    let node = try HostedTestServer()
    let client = try node.connect(token: try node.tokens(["erin"])["erin"])
    try client.result("tips/observe", ["ids": ["welcome.tour"]])
    try client.result("tips/invalidate", ["id": "welcome.tour", "reason": "tipClosed"])
    try client.result("tips/resetEligibility", ["id": "welcome.tour"])
    func entries() throws -> [String] {
      try client.result("analytics/read", ["limit": 1000])["events"]?.arrayValue?.compactMap { event in
        event["tipId"]?.stringValue == "welcome.tour" ? event["type"]?.stringValue : nil
      } ?? []
    }
    let before = try entries()
    node.store.failNextCommits = 1
    #expect(
      try client.refusal("tips/invalidate", ["id": "welcome.tour", "reason": "tipClosed"]).code.rawValue == -32016)
    try client.result("events/donate", ["id": "search.opened"])  // a commit after the reload
    #expect(try entries() == before)
  }

  /// Idempotency keys in hosted mode: a repeat gets the first reply and changes nothing; a change whose commit failed
  /// (-32016, outcome unknown to the client) is retried with its key and made exactly once; the keys are stored with
  /// the account (a reload reads them back).
  @Test func aRetryWithItsKeyIsMadeExactlyOnce() throws {
    let node = try HostedTestServer()
    let client = try node.connect(token: try node.tokens(["fay"])["fay"])
    let first = try client.result("events/donate", ["id": "search.opened", "idempotencyKey": "a"])
    #expect(try client.result("events/donate", ["id": "search.opened", "idempotencyKey": "a"]) == first)
    node.store.failNextCommits = 1
    #expect(
      try client.refusal("events/donate", ["id": "search.opened", "idempotencyKey": "b"]).code.rawValue == -32016)
    let retried = try client.result("events/donate", ["id": "search.opened", "idempotencyKey": "b"])
    #expect(retried["lifetime"]?.intValue == 2)
    #expect(try client.result("events/donate", ["id": "search.opened", "idempotencyKey": "b"]) == retried)
    // Read back from the store after a reload (another failed commit reads the account again).
    node.store.failNextCommits = 1
    _ = try client.refusal("events/donate", ["id": "search.opened", "idempotencyKey": "c"])
    #expect(try client.result("events/donate", ["id": "search.opened", "idempotencyKey": "a"]) == first)
    #expect(try client.result("events/donate", ["id": "search.opened"])["lifetime"]?.intValue == 3)
  }

  /// An account holds at most --account-max-keys idempotency keys of the window: a change with a new key past it is
  /// refused and changes nothing; repeats of the keys it holds and changes without a key still work.
  @Test func idempotencyKeysAreBoundedPerAccount() throws {
    let node = try HostedTestServer { $0.accountMaxIdempotencyKeys = 3 }
    let client = try node.connect(token: try node.tokens(["minter"])["minter"])
    var replies: [JSONValue] = []
    for key in ["k1", "k2", "k3"] {
      replies.append(try client.result("events/donate", ["id": "search.opened", "idempotencyKey": .string(key)]))
    }
    let refusal = try client.refusal("events/donate", ["id": "search.opened", "idempotencyKey": "k4"])
    #expect(refusal.code.rawValue == -32015)
    #expect(refusal.data?["quota"]?.stringValue == "idempotencyKeys")
    #expect(refusal.data?["limit"]?.intValue == 3)
    #expect((refusal.data?["retryAfter"]?.doubleValue ?? 0) > 3_600)
    #expect(try client.result("events/donate", ["id": "search.opened", "idempotencyKey": "k2"]) == replies[1])
    #expect(try client.result("events/donate", ["id": "search.opened"])["lifetime"]?.intValue == 4)
  }

  /// The node (`HostedNode`) counts a session from its first: the account stays resident while other accounts come
  /// and go past --max-resident-accounts.
  @Test func aLiveAccountIsNeverEvicted() throws {
    let node = try HostedTestServer { $0.maxResidentAccounts = 1 }
    let tokens = try node.tokens(["live", "passing-1", "passing-2"])
    let live = try node.connect(token: tokens["live"])
    try live.result("tips/observe", [:])
    for name in ["passing-1", "passing-2"] {
      let passing = try node.connect(token: tokens[name])
      try passing.result("tips/status", [:])
      passing.stream.peerClose()
      node.loop.run()
    }
    #expect(node.hosted.isResident("live"))
  }

  /// An erased account's token signs in no more; its sessions are closed.
  @Test func anErasedAccountStaysErased() throws {
    let node = try HostedTestServer()
    let token = try node.tokens(["dora"])["dora"]!
    let user = try node.connect(token: token)
    try user.result("events/donate", ["id": "search.opened"])
    let admin = try node.connect(token: HostedTestServer.adminToken)
    #expect(try admin.result("accounts/delete", ["account": "dora"])["closedSessions"]?.intValue == 1)
    try user.flush()
    #expect(user.stream.hasClosed)
    let again = try node.connect(token: nil)
    let refusal = try again.refusal("initialize", HostedTestServer.initialize(token: token))
    #expect(refusal.data?["reason"]?.stringValue == "deleted")
  }
}
