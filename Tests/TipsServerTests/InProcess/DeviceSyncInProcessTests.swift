import Foundation
import Testing
import TipsJSON
import TipsProtocol
import TipsTestSupport

@testable import TipsHosted
@testable import TipsServer

/// `sync/push`, `sync/pull` and `sync/changed` on a node in-process (#37), every account in memory: what the Python
/// suite (protocol/tests/test_device_sync.py) checks against PostgreSQL and device daemons, here with manual time.
@Suite(.enabled(if: PyJWTMint.available, "needs python3 with PyJWT (make deps-pip)"))
struct DeviceSyncInProcessTests {
  static let device = "device:phone"

  static func donation(lifetime: Int64) -> JSONValue {
    let now = Date().timeIntervalSince1970
    return .object([
      "hlc": .int(Int64(now * 1000) << 16 + lifetime), "epoch": .int(0), "kind": .string("donation"),
      "event": .string("search.opened"), "at": .double(now), "lifetime": .int(lifetime),
    ])
  }

  static func push(_ seqs: ClosedRange<Int64>) -> JSONValue {
    .object([
      "device": .string(device),
      "ops": .array(seqs.map { .object(["seq": .int($0), "op": donation(lifetime: $0)]) }),
    ])
  }

  func searches(_ client: EmbeddedClient) throws -> Int64? {
    let state = try client.result("inspect/state", [:])
    return state["events"]?.arrayValue?.first { $0["id"]?.stringValue == "search.opened" }?["lifetime"]?.intValue
  }

  @Test func aPushIsStoredOnceMergedAndAnsweredOnceCommitted() throws {
    let node = try HostedTestServer()
    let tokens = try node.tokens(["alice"])
    let web = try node.connect(token: tokens["alice"])
    let phone = try node.connect(token: tokens["alice"])
    let first = try phone.result("sync/push", Self.push(1...2))
    let cursor = try #require(first["cursor"]?.intValue)
    // Sent again (a reply lost on the way): nothing stored twice, the same cursor.
    #expect(try phone.result("sync/push", Self.push(1...2))["cursor"]?.intValue == cursor)
    node.loop.run()
    let page = try phone.result("sync/pull", ["device": .string(Self.device), "after": 0])
    let mine = page["operations"]?.arrayValue?.filter { $0["device"]?.stringValue == Self.device } ?? []
    #expect(mine.map { $0["seq"]?.intValue } == [1, 2])
    #expect(page["cursor"]?.intValue == cursor && page["more"] == .bool(false) && page["snapshot"] == .null)
    // Merged into the account the node holds: its sessions see the device's donations.
    #expect(try searches(web) == 2)

    // The pulling session hears the account move, whoever moved it.
    try web.result("events/donate", ["id": "search.opened"])
    node.loop.run()
    try phone.flush()
    let notes = phone.takeNotifications("sync/changed")
    #expect(notes.count >= 1)
    #expect(notes.first?["params"]?["subscription"] == page["subscription"])
    #expect((notes.last?["params"]?["cursor"]?.intValue ?? 0) > cursor)
  }

  @Test func aPushPostgreSQLDidNotCommitIsNotAcknowledgedAndARetryIsStored() throws {
    let node = try HostedTestServer()
    let phone = try node.connect(token: try node.tokens(["carol"])["carol"])
    node.store.failNextCommits = 1
    let refusal = try phone.refusal("sync/push", Self.push(1...1))
    #expect(refusal.code.rawValue == -32016)
    #expect(try phone.result("sync/push", Self.push(1...1))["cursor"]?.intValue ?? 0 >= 1)
    node.loop.run()
    #expect(try searches(phone) == 1)
  }

  @Test func aUsersTokenActsOnItsOwnAccountOnlyAndGarbageChangesNothing() throws {
    let node = try HostedTestServer()
    let tokens = try node.tokens(["mallory", "victim"])
    let mallory = try node.connect(token: tokens["mallory"])
    var foreign = Self.push(1...1).objectValue!
    foreign["account"] = "victim"
    #expect(try mallory.refusal("sync/push", .object(foreign)).code.rawValue == -32014)
    #expect(
      try mallory.refusal("sync/pull", ["device": .string(Self.device), "account": "victim"]).code.rawValue == -32014)
    var garbage = Self.donation(lifetime: 1).objectValue!
    garbage["lifetime"] = .int(Int64.max)
    let refused = try mallory.refusal(
      "sync/push", ["device": .string(Self.device), "ops": [["seq": 1, "op": .object(garbage)]]])
    #expect(refused.code == .invalidParams && refused.message.contains("params.ops[0].op: lifetime"))
    node.loop.run()
    let victim = try node.connect(token: tokens["victim"])
    #expect(try searches(victim) == 0)
    #expect(try searches(mallory) == 0)
    // The admin names the account, as for any account-scoped method.
    let admin = try node.connect(token: HostedTestServer.adminToken)
    var named = Self.push(1...1).objectValue!
    named["account"] = "victim"
    #expect(try admin.result("sync/push", .object(named))["cursor"]?.intValue ?? 0 >= 1)
    node.loop.run()
    #expect(try searches(victim) == 1)
  }
}
