import Testing
import TipsProtocol

@testable import TipsCommands

/// The sync options of `tipsd serve` and the lines of `tipsd sync status`, without PostgreSQL (the suites with a
/// server are in TipsSyncTests; `sync/status` without `--sync` is in TipsServerTests' in-process suites).
@Suite struct SyncOptionTests {
  @Test func syncOptionsParse() throws {
    let parsed = try ServeCommand(
      parsing: [
        "--sync", "postgresql://tipsd:pw@db.example/tips", "--account", "alice", "--device", "phone",
        "--sync-outbox-limit", "50",
      ], environment: [:]
    ).configuration
    let sync = try #require(parsed.sync)
    #expect(sync.server == "postgresql://tipsd:pw@db.example/tips")
    #expect(sync.account == "alice" && sync.device == "phone" && sync.outboxLimit == 50)
    #expect(try ServeCommand(parsing: [], environment: [:]).configuration.sync == nil)
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
        try ServeCommand(parsing: arguments, environment: [:])
      } throws: { error in
        "\(error)".contains(message)
      }
    }
    #expect(ServeCommand.help.contains("--sync URL") && TipsdCommand.overview.contains("sync status"))
  }

  @Test func hostedOptionsParse() throws {
    let base = [
      "--hosted", "postgresql://tipsd@db.example/tips", "--catalog", "tips.json", "--jwt-secret-file", "secret",
    ]
    let defaults = try #require(try ServeCommand(parsing: base, environment: [:]).configuration.hosted)
    #expect(
      defaults.compactionThreshold == 500 && defaults.accountRate == 50 && defaults.maxResidentAccounts == 100_000)
    // Behind a balancer every session comes from one address: per-peer limits are off unless given.
    let hostedLimits = try ServeCommand(parsing: base, environment: [:]).configuration.connectionLimits
    #expect(hostedLimits.perPeer == 0 && hostedLimits.ratePerPeer == 0)
    let given = try ServeCommand(
      parsing: base + ["--max-connections-per-peer", "5", "--peer-connection-rate", "9"], environment: [:]
    ).configuration.connectionLimits
    #expect(given.perPeer == 5 && given.ratePerPeer == 9)
    #expect(try ServeCommand(parsing: [], environment: [:]).configuration.connectionLimits.perPeer == 128)
    let parsed = try #require(
      try ServeCommand(
        parsing: base + [
          "--compaction-threshold", "40", "--account-rate", "7", "--max-resident-accounts", "9",
          "--account-max-donations", "11", "--node", "n1", "--account-max-keys", "13", "--ops-device-days", "2.5",
          "--postgres-timeout", "4", "--repair-interval", "0.5", "--webhook-retry-first", "0.25",
          "--webhook-lease", "3", "--commit-pipeline", "4",
        ], environment: [:]
      ).configuration.hosted)
    #expect(parsed.compactionThreshold == 40 && parsed.accountRate == 7 && parsed.maxResidentAccounts == 9)
    #expect(parsed.accountMaxDonations == 11 && parsed.node == "n1")
    #expect(parsed.accountMaxIdempotencyKeys == 13 && parsed.opsDeviceDays == 2.5 && parsed.postgresTimeout == 4)
    #expect(parsed.repairInterval == 0.5)
    #expect(parsed.webhookRetryFirst == 0.25 && parsed.webhookLease == 3 && parsed.commitPipeline == 4)
    #expect(parsed.setBasedCommit)  // the default
    let perAccount = try ServeCommand(parsing: base + ["--commit-per-account"], environment: [:]).configuration.hosted
    #expect(perAccount?.setBasedCommit == false)
    let refusals: [([String], String)] = [
      (["--compaction-threshold", "40"], "need --hosted URL"),
      (base + ["--compaction-threshold", "0"], "positive integer"),
      (base + ["--compaction-threshold"], "--compaction-threshold"),
      (base + ["--account-max-keys", "0"], "positive integer"),
      (base + ["--ops-device-days", "0"], "--ops-device-days"),
      (base + ["--postgres-timeout", "-1"], "--postgres-timeout"),
      (base + ["--repair-interval", "-1"], "--repair-interval: must be 0 (off)"),
      (base + ["--webhook-retry-first", "0"], "--webhook-retry-first"),
      (base + ["--webhook-lease", "0.5"], "--webhook-lease"),
      (base + ["--commit-pipeline", "0"], "--commit-pipeline: \"0\" is not a positive integer"),
      (Array(base.prefix(4)), "needs --jwt-secret-file FILE or --jwks FILE"),
      (base + ["--sync", "postgresql://db/tips", "--account", "a"], "do not go together"),
    ]
    for (arguments, message) in refusals {
      #expect {
        try ServeCommand(parsing: arguments, environment: [:])
      } throws: { error in
        "\(error)".contains(message)
      }
    }
    #expect(ServeCommand.help.contains("--compaction-threshold N"))
    for flag in [
      "--account-max-keys N", "--ops-device-days N", "--postgres-timeout SECONDS", "--repair-interval SECONDS",
    ] {
      #expect(ServeCommand.help.contains(flag), "\(flag) in the help")
    }
  }

  @Test func statusLines() {
    let status = SyncStatusRequest.Response(
      enabled: true, state: "connected", server: "postgresql://u:***@db/t", account: "alice", device: "phone",
      outbox: 3, outboxLimit: 100, lagSeconds: 1.25, cursor: 42, lastPushAt: 1_767_225_600, lastPullAt: nil,
      lastError: nil)
    #expect(
      SyncStatusCommand.lines(status, now: 1_767_225_602.5) == [
        "state: connected", "server: postgresql://u:***@db/t", "account: alice", "device: phone",
        "outbox: 3 (limit 100)", "lag: 1.3 s", "cursor: 42", "last push: 2026-01-01T00:00:00Z (2.5 s ago)",
        "last pull: never", "last error: none",
      ])
    #expect(
      SyncStatusCommand.lines(.disabled, now: 0) == ["state: disabled (start tipsd serve with --sync URL --account ID)"]
    )
  }
}
