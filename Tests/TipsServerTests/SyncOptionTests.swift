import Foundation
import Testing
import TipsJSON
@testable import TipsServer
import TipsTestSupport

/// The sync options and `sync/status` without PostgreSQL (the suites with a server are in TipsSyncTests).
@Suite struct SyncOptionTests {
  @Test func syncOptionsParse() throws {
    let parsed = try TipsdCommand.parseServe(
      ["--sync", "postgresql://tipsd:pw@db.example/tips", "--account", "alice", "--device", "phone",
       "--sync-outbox-limit", "50"], environment: [:])
    let sync = try #require(parsed.sync)
    #expect(sync.server == "postgresql://tipsd:pw@db.example/tips")
    #expect(sync.account == "alice" && sync.device == "phone" && sync.outboxLimit == 50)
    #expect(try TipsdCommand.parseServe([], environment: [:]).sync == nil)
    let refusals: [([String], String)] = [
      (["--sync", "postgresql://db/tips"], "needs --account"),
      (["--account", "alice"], "need --sync"),
      (["--sync-outbox-limit", "5"], "need --sync"),
      (["--sync", "postgresql://[::1", "--account", "a"], "not a PostgreSQL connection string"),
      (["--sync", "postgresql://db/tips", "--account", ""], "must not be empty"),
      (["--sync", "postgresql://db/tips", "--account", "a", "--sync-outbox-limit", "0"], "positive integer"),
    ]
    for (arguments, message) in refusals {
      #expect {
        try TipsdCommand.parseServe(arguments, environment: [:])
      } throws: { error in
        "\(error)".contains(message)
      }
    }
    #expect(TipsdCommand.usage.contains("--sync URL") && TipsdCommand.usage.contains("tipsd sync status"))
  }

  /// Without --sync, `sync/status` says so (and `tipsd sync status` exits 1 saying how to turn it on).
  @Test func statusWithoutSync() throws {
    let daemon = try Daemon([])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    let status = try client.result("sync/status")
    #expect(status["enabled"] == false && status["state"] == "disabled")
    #expect(status["outbox"] == 0 && status["server"] == .null && status["lastPushAt"] == .null)
    #expect(SyncCommand.lines(status, now: 0) == ["state: disabled (start tipsd serve with --sync URL --account ID)"])
  }

  @Test func statusLines() {
    let status: JSONValue = [
      "enabled": true, "state": "connected", "server": "postgresql://u:***@db/t", "account": "alice", "device": "phone",
      "outbox": 3, "outboxLimit": 100, "lagSeconds": 1.25, "cursor": 42, "lastPushAt": 1_767_225_600,
      "lastPullAt": .null, "lastError": .null,
    ]
    #expect(
      SyncCommand.lines(status, now: 1_767_225_602.5) == [
        "state: connected", "server: postgresql://u:***@db/t", "account: alice", "device: phone",
        "outbox: 3 (limit 100)", "lag: 1.3 s", "cursor: 42", "last push: 2026-01-01T00:00:00Z (2.5 s ago)",
        "last pull: never", "last error: none",
      ])
  }
}
