import Testing
import TipsProtocol
import TipsServer
import TipsSync
import TipsTransport

@testable import TipsCommands

/// `tipsd serve --sync wss://… --sync-token-command|--sync-token-file` (#37): a device syncing through a hosted node
/// with the user's token, parsed and checked without a node.
@Suite struct NodeSyncOptionTests {
  @Test func aNodeURLWithATokenSourceParses() throws {
    let byFile = try #require(
      try ServeCommand(
        parsing: ["--sync", "wss://tips.example.com/", "--sync-token-file", "/run/token"], environment: [:]
      ).configuration.sync)
    #expect(byFile.server == "wss://tips.example.com/" && byFile.tokenSource == .file("/run/token"))
    // The account is the token's sub: --account is not needed (and may be given; the daemon checks it).
    #expect(byFile.account == "" && byFile.device == nil)
    let byCommand = try #require(
      try ServeCommand(
        parsing: [
          "--sync", "ws://127.0.0.1:8787/", "--sync-token-command", "cat /run/token", "--account", "alice",
          "--device", "phone", "--sync-outbox-limit", "9",
        ], environment: [:]
      ).configuration.sync)
    #expect(byCommand.tokenSource == .command("cat /run/token") && byCommand.account == "alice")
    #expect(byCommand.device == "phone" && byCommand.outboxLimit == 9)
    #expect(SyncConfiguration.isNode("wss://x/") && !SyncConfiguration.isNode("postgresql://x/db"))
  }

  @Test func whatCannotWorkIsRefused() {
    let refusals: [([String], String)] = [
      (["--sync", "wss://tips.example.com/"], "needs the user's token"),
      (["--sync", "ws://tips.example.com/", "--sync-token-file", "t"], "clear text"),
      (["--sync", "wss://", "--sync-token-file", "t"], "no host"),
      (["--sync", "wss://user:pw@tips.example.com/", "--sync-token-file", "t"], "credentials belong in the token"),
      (["--sync", "wss://h:99999/", "--sync-token-file", "t"], "not a port"),
      (["--sync", "wss://h/", "--sync-token-file", "t", "--sync-token-command", "c"], "give one of"),
      (["--sync", "postgresql://db/tips", "--account", "a", "--sync-token-file", "t"], "go with a hosted node"),
      (["--sync-token-file", "t"], "need --sync"),
      (
        [
          "--hosted", "postgresql://db/tips", "--catalog", "c.json", "--jwt-secret-file", "s", "--node",
          "device:evil",
        ], "may not begin with"
      ),
    ]
    for (arguments, message) in refusals {
      #expect {
        try ServeCommand(parsing: arguments, environment: [:])
      } throws: { error in
        "\(error)".contains(message)
      }
    }
    #expect(ServeCommand.help.contains("--sync-token-command") && ServeCommand.help.contains("--sync-token-file"))
  }

  @Test func urlsParse() throws {
    let plain = try WebSocketURL.parse("wss://tips.example.com").get()
    #expect(plain == WebSocketURL(secure: true, host: "tips.example.com", port: 443, path: "/"))
    let full = try WebSocketURL.parse("ws://[::1]:8787/rpc?x=1").get()
    #expect(full == WebSocketURL(secure: false, host: "::1", port: 8787, path: "/rpc?x=1") && full.isLoopback)
    #expect(full.description == "ws://[::1]:8787/rpc?x=1")
    #expect(try WebSocketURL.parse("ws://127.0.0.1:9").get().isLoopback)
    #expect(!(try WebSocketURL.parse("ws://10.0.0.1:9").get().isLoopback))
    #expect((try? WebSocketURL.parse("https://tips.example.com/").get()) == nil)
  }
}
