import Foundation
import Testing
import TipsProtocol
import TipsServer
import TipsTestSupport

@testable import TipsCommands

/// Every subcommand refuses a missing value, a malformed number, an unknown option and a stray argument the same way,
/// and answers `--help` — through its type, and through the real binary (exit status, stderr).
@Suite struct CommandLineTests {
  /// Parses with `C` and returns its usage error.
  func refusal<C: Command>(_ type: C.Type, _ arguments: [String]) -> UsageError? {
    do {
      _ = try C(parsing: arguments, environment: [:])
      return nil
    } catch {
      return error
    }
  }

  @Test func eachCommandNamesWhatIsWrong() {
    // A representative edge per command: missing value, malformed number, unknown option, stray argument.
    let cases: [(any Command.Type, [String], String)] = [
      (ServeCommand.self, ["--socket"], "--socket needs a value"),
      (ServeCommand.self, ["--max-connections", "many"], "--max-connections: \"many\" is not a positive integer"),
      (ServeCommand.self, ["--clock", "fast"], "--clock: expected system or virtual (got \"fast\")"),
      (ServeCommand.self, ["extra"], "unexpected argument \"extra\""),
      (CallCommand.self, ["--socket"], "--socket needs a value"),
      (CallCommand.self, ["--socket", "--timeout", "1", "m"], "--socket needs a value"),
      (CallCommand.self, ["--timeout", "abc", "m"], "--timeout: \"abc\" is not a number"),
      (CallCommand.self, ["--timeout", "0", "m"], "--timeout: must be a positive number of seconds"),
      (CallCommand.self, [], "which method? (tipsd call METHOD)"),
      (CallCommand.self, ["m", "{}", "x"], "unexpected argument \"x\""),
      (CallCommand.self, ["m", "{"], "PARAMS-JSON is not valid JSON"),
      (TokenCommand.self, ["--token-file"], "--token-file needs a value"),
      (TokenCommand.self, ["x"], "unexpected argument \"x\""),
      (TestCommand.self, ["--junit"], "--junit needs a value"),
      (TestCommand.self, [], "no transcripts given"),
      (LintCommand.self, ["c.json", "--format", "xml"], "--format: expected text, json or github (got \"xml\")"),
      (LintCommand.self, ["a.json", "b.json"], "unexpected argument \"b.json\""),
      (LintCommand.self, ["a.json", "--id-pattern", "(unclosed"], "--id-pattern: "),
      (LintCommand.self, [], "which catalog?"),
      (
        StringsExportCommand.self, ["c.json", "--format", "po", "--out", "o"],
        "--format: expected json, strings, xcstrings or xliff (got \"po\")"
      ),
      (StringsExportCommand.self, ["c.json", "--format", "json"], "--out DIR is required"),
      (StringsExportCommand.self, ["c.json", "--format", "json", "--from", "x"], "unknown option \"--from\""),
      (StringsImportCommand.self, ["c.json", "--format", "json", "--from", "x"], "--from PATH and --messages DIR"),
      (LspCommand.self, ["--id-pattern"], "--id-pattern needs a value"),
      (LspCommand.self, ["--live"], "unknown option \"--live\""),
      (MetricsCommand.self, ["--since"], "--since needs a value"),
      (MetricsCommand.self, ["--since", "7x"], "--since: \"7x\": expected seconds since the epoch or a span"),
      (MetricsCommand.self, ["--timeout", "soon"], "--timeout: \"soon\" is not a number"),
      (InspectCommand.self, ["--json", "x"], "unexpected argument \"x\""),
      (ReportCommand.self, ["--since", "1d"], "--html FILE is required"),
      (ReportCommand.self, ["--html"], "--html needs a value"),
      (SyncStatusCommand.self, ["--socket"], "--socket needs a value"),
    ]
    for (type, arguments, message) in cases {
      let error = refusal(type, arguments)
      guard case .invalid(let text)? = error else {
        Issue.record("\(type.name) \(arguments): expected a usage error, got \(String(describing: error))")
        continue
      }
      #expect(text.hasPrefix(message), "\(type.name) \(arguments): \(text)")
    }
    for type in TipsdCommand.commands {
      #expect(refusal(type, ["--help"]) == .helpRequested, "\(type.name)")
      #expect(refusal(type, ["--no-such-option"]) == .invalid("unknown option \"--no-such-option\""), "\(type.name)")
    }
  }

  /// The per-peer connection limits (#27): their defaults, their flags, and bad values refused with a clear message.
  @Test func serveKeepsItsConnectionLimits() throws {
    let defaults = try ServeCommand(parsing: [], environment: [:]).configuration.connectionLimits
    #expect(defaults.perPeer == 128 && defaults.ratePerPeer == 200 && defaults.burstPerPeer == 400)
    #expect(defaults.handshakeTimeout == 10)
    let set = try ServeCommand(
      parsing: ["--max-connections-per-peer", "5", "--peer-connection-rate", "2.5", "--handshake-timeout", "0.5"],
      environment: [:]
    ).configuration.connectionLimits
    #expect(set.perPeer == 5 && set.ratePerPeer == 2.5 && set.burstPerPeer == 5 && set.handshakeTimeout == 0.5)
    let off = try ServeCommand(
      parsing: ["--max-connections-per-peer", "0", "--peer-connection-rate", "0"], environment: [:]
    ).configuration.connectionLimits
    #expect(off.perPeer == 0 && off.ratePerPeer == 0)
    let cases: [([String], String)] = [
      (["--max-connections-per-peer", "-1"], "--max-connections-per-peer: \"-1\" is not 0 or a positive integer"),
      (["--max-connections-per-peer", "lots"], "--max-connections-per-peer: \"lots\" is not 0 or a positive integer"),
      (["--peer-connection-rate", "fast"], "--peer-connection-rate: \"fast\" is not a number"),
      (
        ["--peer-connection-rate", "-3"],
        "--peer-connection-rate: must be 0 or a positive number of connections a second"
      ),
      (["--handshake-timeout", "0"], "--handshake-timeout: must be a positive number of seconds"),
      (["--handshake-timeout"], "--handshake-timeout needs a value"),
    ]
    for (arguments, expected) in cases {
      guard case .invalid(let text)? = refusal(ServeCommand.self, arguments) else {
        Issue.record("\(arguments) was not refused")
        continue
      }
      #expect(text == expected, "\(arguments)")
    }
  }

  @Test func serveKeepsItsFlags() throws {
    let serve = try ServeCommand(
      parsing: [
        "--socket", "/run/t.sock", "--datastore", ":memory:", "--fsync", "--catalog", "c.json", "--messages", "m",
        "--clock", "virtual", "--clock-start", "1000", "--allow-testing", "--strict-events", "--install-id", "i",
        "--log-level", "debug", "--max-connections", "3", "--max-message-size", "4096", "--partial-timeout", "2",
        "--queue-limit", "100", "--allow-uid", "7", "--listen", "127.0.0.1:0", "--token-file", "t",
        "--allow-origin", "http://localhost:1", "--ping-interval", "5", "--watch", "--datastore-recover",
      ], environment: [:])
    let c = serve.configuration
    #expect(c.listen == .socket(path: "/run/t.sock") && c.datastorePath == ":memory:" && c.fsync && c.recoverDatastore)
    #expect(c.catalogPath == "c.json" && c.messagesDirectory == "m" && c.clock == .virtual(start: 1000))
    #expect(c.allowTesting && c.strictEvents && c.installID == "i" && c.logLevel == .debug && c.watchCatalog)
    #expect(c.maxConnections == 3 && c.maxMessageSize == 4096 && c.partialMessageTimeout == 2)
    #expect(c.outgoingQueueLimit == 100 && c.allowedPeerUIDs == [7] && c.web.addresses.count == 1)
    #expect(c.web.tokenFile == "t" && c.web.allowedOrigins == ["http://localhost:1"] && c.web.pingInterval == 5)
    // The defaults come from the environment.
    let defaults = try ServeCommand(parsing: [], environment: ["XDG_RUNTIME_DIR": "/r", "XDG_DATA_HOME": "/d"])
    #expect(defaults.configuration.listen == .socket(path: "/r/tipsd/tipsd.sock"))
    #expect(defaults.configuration.datastorePath == "/d/tipsd/default.sqlite")
    #expect(try ServeCommand(parsing: ["--stdio"], environment: [:]).configuration.listen == .stdio)
    #expect(throws: UsageError.invalid("--clock-start needs --clock virtual")) {
      try ServeCommand(parsing: ["--clock-start", "5"], environment: [:])
    }
    #expect(throws: UsageError.invalid("--allow-uid: \"-1\" is not a uid")) {
      try ServeCommand(parsing: ["--allow-uid", "-1"], environment: [:])
    }
  }

  @Test func theOverviewListsEveryCommandFromItsType() {
    let overview = TipsdCommand.overview
    for type in TipsdCommand.commands {
      #expect(overview.contains("  \(type.name)  ") && overview.contains(type.abstract), "\(type.name)")
      #expect(type.help.hasPrefix("usage: tipsd \(type.name)"), "\(type.name)")
    }
    #expect(ServeCommand.help.contains("SYNC ACROSS DEVICES") && ServeCommand.help.contains("--ping-interval SECONDS"))
  }

  // MARK: The real binary

  struct Run {
    var status: Int32
    var output: String
    var errors: String
  }

  func tipsd(_ arguments: [String]) throws -> Run {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let pid = try spawnChild(
      [tipsdBinary()] + arguments, output: .file("\(directory)/out"), errors: .file("\(directory)/err"))
    let status = try waitForExit(pid)
    return Run(
      status: (status >> 8) & 0xFF, output: try String(contentsOfFile: "\(directory)/out", encoding: .utf8),
      errors: try String(contentsOfFile: "\(directory)/err", encoding: .utf8))
  }

  func firstOptionWithAValue<C: Command>(_ type: C.Type) -> String? {
    C.options.first { $0.valueName != nil }?.names.first
  }

  /// Every subcommand through the binary: `--help` exits 0 with its usage on stdout; an unknown option, a missing
  /// value and (where the command takes a number) a malformed one exit 2 with the problem then the usage on stderr.
  @Test(arguments: TipsdCommand.commands.map { $0.name })
  func theBinaryRefusesAndHelpsTheSameWayEverywhere(command: String) throws {
    let words = command.split(separator: " ").map(String.init)
    let help = try tipsd(words + ["--help"])
    #expect(help.status == 0 && help.errors.isEmpty)
    #expect(help.output.hasPrefix("usage: tipsd \(command)"))

    let unknown = try tipsd(words + ["--bogus"])
    #expect(unknown.status == 2 && unknown.output.isEmpty)
    let lines = unknown.errors.split(separator: "\n")
    #expect(lines.first == "tipsd \(command): unknown option \"--bogus\"")
    #expect(lines.dropFirst().first?.hasPrefix("usage: tipsd \(command)") == true)

    let type = try #require(TipsdCommand.commands.first { $0.name == command })
    let name = firstOptionWithAValue(type)
    let valued = try #require(name)
    let missing = try tipsd(words + [valued])
    #expect(missing.status == 2)
    #expect(missing.errors.hasPrefix("tipsd \(command): \(valued) needs a value\nusage: "))
  }

  @Test func aMalformedNumberAndAStrayArgumentThroughTheBinary() throws {
    let number = try tipsd(["call", "--timeout", "abc", "tips/status"])
    #expect(number.status == 2 && number.errors.hasPrefix("tipsd call: --timeout: \"abc\" is not a number\n"))
    let stray = try tipsd(["sync", "status", "now"])
    #expect(stray.status == 2 && stray.errors.hasPrefix("tipsd sync status: unexpected argument \"now\"\n"))
    let group = try tipsd(["strings"])
    #expect(group.status == 2 && group.errors.contains("strings needs a command"))
    let groupHelp = try tipsd(["strings", "--help"])
    #expect(groupHelp.status == 0 && groupHelp.output.hasSuffix("\n"))
    #expect(
      groupHelp.output.contains("usage: tipsd strings export")
        && groupHelp.output.contains("usage: tipsd strings import"))
    let unknownVerb = try tipsd(["sync", "stats"])
    #expect(
      unknownVerb.status == 2
        && unknownVerb.errors.hasPrefix("tipsd: unknown command \"sync stats\" (one of: sync status;"))
    let version = try tipsd(["--version"])
    #expect(
      version.status == 0 && version.output == "tipsd \(TipsdVersion.server) (protocol \(ProtocolVersion.current))\n")
    let overview = try tipsd(["help"])
    #expect(overview.status == 0 && overview.output == TipsdCommand.overview)
    #expect(try tipsd([]).status == 2)
  }

  static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

  /// `tipsd lint`'s exit status is the report's; `tipsd strings` writes what it says it wrote.
  @Test func lintAndStringsThroughTheBinary() throws {
    let demo = "\(Self.repository)/catalog/demo.json"
    let fixtures = "\(Self.repository)/Tests/TipsCatalogTests/Fixtures/lint"
    #expect(try tipsd(["lint", demo, "--simulate"]).status == 0)
    let failing = try tipsd(["lint", "\(fixtures)/duplicate-id-fail.json", "--format", "github"])
    #expect(failing.status == 1 && failing.output.contains("::error "))
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let exported = try tipsd([
      "strings", "export", demo, "--messages", "\(Self.repository)/catalog/messages", "--format", "json", "--out",
      "\(directory)/out",
    ])
    #expect(exported.status == 0 && exported.output.contains("\(directory)/out/ja.json"))
    let imported = try tipsd([
      "strings", "import", demo, "--format", "json", "--from", "\(directory)/out", "--messages", "\(directory)/m",
    ])
    #expect(imported.status == 0 && FileManager.default.fileExists(atPath: "\(directory)/m/ja.json"))
  }
}
