import Foundation
import Testing
import TipsJSON
import TipsTestSupport

@testable import TipsServer

/// Changes with an `idempotencyKey` (issue #34): a repeat of the key changes nothing and gets the first reply, in the
/// same turn, later, and after a restart; a change whose commit failed frees its key.
@Suite struct IdempotencyTests {
  @Test func aRepeatedKeyChangesNothingAndGetsTheFirstReply() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    let first = try client.result("events/donate", ["id": "e", "idempotencyKey": "k-1"])
    #expect(first == ["count": 1, "lifetime": 1])
    #expect(try client.result("events/donate", ["id": "e", "idempotencyKey": "k-1"]) == first)
    #expect(try client.result("events/donate", ["id": "e", "idempotencyKey": "k-2"]) == ["count": 2, "lifetime": 2])
    #expect(try client.result("events/donate", ["id": "e"]) == ["count": 3, "lifetime": 3])
    // Another connection, the same key: the same reply.
    let other = try fixture.connect()
    #expect(try other.result("events/donate", ["id": "e", "idempotencyKey": "k-2"]) == ["count": 2, "lifetime": 2])
    // Two repeats in one turn (a pipelined retry): one change.
    let a = client.sendRequest("events/donate", ["id": "f", "idempotencyKey": "k-3"])
    let b = client.sendRequest("events/donate", ["id": "f", "idempotencyKey": "k-3"])
    try client.flush()
    #expect(try client.takeReply(id: a)["result"] == ["count": 1, "lifetime": 1])
    #expect(try client.takeReply(id: b)["result"] == ["count": 1, "lifetime": 1])
  }

  @Test func everyChangeTakesAKeyAndNothingElseDoes() throws {
    let fixture = try TestServer { $0.allowTesting = true }
    let client = try fixture.connect()
    try client.registerToggle()
    let changes: [(String, JSONValue)] = [
      ("tips/displayed", ["id": "toggle.tip", "duration": 1]),
      ("tips/invalidate", ["id": "toggle.tip", "reason": "tipClosed"]),
      ("tips/resetEligibility", ["id": "toggle.tip"]),
      ("parameters/set", ["id": "flag", "value": true]),
    ]
    for (index, (method, params)) in changes.enumerated() {
      var keyed = params.objectValue ?? [:]
      keyed["idempotencyKey"] = .string("change-\(index)")
      let first = try client.call(method, .object(keyed))
      #expect(first["result"] != nil, "\(method): \(first.jsonString)")
      #expect(try client.call(method, .object(keyed))["result"] == first["result"], "\(method)")
    }
    let refused = try client.refusal("tips/status", ["idempotencyKey": "x"])
    #expect(refused.code.rawValue == -32602)
    for bad: JSONValue in ["", 7, .string(String(repeating: "k", count: 129))] {
      let error = try client.refusal("events/donate", ["id": "e", "idempotencyKey": bad])
      #expect(error.code.rawValue == -32602 && error.message.contains("idempotencyKey"))
    }
  }

  /// The key is stored in the change's own transaction: a restart answers a repeat with the first reply.
  @Test func aKeyOutlivesARestart() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/state.sqlite"
    do {
      let fixture = try TestServer { $0.datastorePath = path }
      let client = try fixture.connect()
      #expect(try client.result("events/donate", ["id": "e", "idempotencyKey": "kept"])["lifetime"] == 1)
      fixture.server.beginStop()
      fixture.loop.advance(seconds: 3)
      fixture.server.closeDatastore()
    }
    let fixture = try TestServer { $0.datastorePath = path }
    let client = try fixture.connect()
    #expect(try client.result("events/donate", ["id": "e", "idempotencyKey": "kept"])["lifetime"] == 1)
    #expect(try client.result("events/donate", ["id": "e"])["lifetime"] == 2)
  }

  /// A change whose commit failed was never made: its key is free, and a retry makes it once.
  @Test func aFailedCommitFreesItsKey() throws {
    let fixture = try TestServer { $0.datastoreMaxPages = 40 }
    let client = try fixture.connect()
    let padding = String(repeating: "x", count: 2_000)
    var failedKey: String?
    for n in 0..<2_000 {
      let key = "pad-\(n)"
      let reply = try client.call(
        "events/donate",
        ["id": .string("e\(n % 20)"), "info": ["pad": .string(padding)], "idempotencyKey": .string(key)])
      if reply["error"] != nil {
        failedKey = key
        break
      }
    }
    let key = try #require(failedKey)
    #expect(fixture.server.local?.idempotency.result(for: key) == nil)
  }
}
