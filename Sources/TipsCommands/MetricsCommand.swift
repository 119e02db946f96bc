import TipsClient
import TipsProtocol
import TipsSystem

/// `tipsd metrics`: seed 000's metrics per tip and variant from a running daemon (`metrics/get`), as a table, CSV or
/// JSON. On a hosted node signed in as the admin (`--token-file`): every account's, pooled, or one `--account`'s.
struct MetricsCommand: Command {
  static let name = "metrics"
  static let abstract = "seed 000's metrics per tip and variant, as a table (or CSV, or JSON)"
  static let usage =
    "tipsd metrics [--socket PATH] [--token-file FILE] [--account ID] [--since WHEN] [--until WHEN] [--tips ID,ID]\n"
    + "              [--cuped] [--json | --csv]"
  static let discussion =
    "WHEN: " + Since.help + "\n"
    + "On a hosted node (tipsd serve --hosted) with the admin token (--token-file): every account's metrics, pooled\n"
    + "(rates with their 95% intervals across accounts, time to first use as the median across accounts), or one\n"
    + "--account's. The account is the unit: lift and variant comparisons compare the accounts that did the goal\n"
    + "after the tip first became displayable for them, with an always-valid 95% interval (safe to look at daily)\n"
    + "and the fixed-horizon one, or \"not enough data yet\" under 100 accounts a side, or a sample ratio mismatch\n"
    + "warning (docs/measuring.md); a one-user daemon is one account, so it shows its counts."

  enum Output { case table, json, csv }

  static let options =
    DaemonOptions.options(\MetricsCommand.daemon) + [
      .value("--since", as: "WHEN", help: "impressions from this instant (default: all kept)") {
        command, value throws(UsageError) in command.since = try Since(value)
      },
      .value("--until", as: "WHEN", help: "impressions before this instant (default: now)") {
        command, value throws(UsageError) in command.until = try Since(value)
      },
      .value("--tips", as: "ID,ID", help: "these tips only (default: every registered tip)") {
        $0.tips = $1.text.split(separator: ",").map(String.init)
      },
      .value("--account", as: "ID", help: "hosted mode, admin: this account's metrics (default: every account's)") {
        $0.account = $1.text
      },
      .flag("--cuped", help: "also adjust lift and comparisons for goal donations before the trigger (CUPED)") {
        $0.cuped = true
      },
      .flag("--json", help: "metrics/get's result as JSON") { $0.output = .json },
      .flag("--csv", help: "one row per tip and variant, a column per number") { $0.output = .csv },
    ]

  var daemon: DaemonOptions
  var since: Since?
  var until: Since?
  var tips: [String]?
  var account: String?
  var cuped = false
  var output = Output.table

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    daemon = DaemonOptions(environment: environment)
    try Arguments.parse(arguments, into: &self, options: Self.options)
  }

  func run() -> Int32 {
    do {
      let client = try daemon.connect(as: "tipsd metrics")
      defer { client.close() }
      // Relative instants count from the daemon's clock (virtual in tests); a hosted admin's session has no account's
      // clock to read, and a hosted node's is the wall clock.
      var now = System.wallClockSeconds()
      if since != nil || until != nil, account == nil, let clock = try? client.send(ClockNowRequest()) {
        now = clock.now
      }
      let request = MetricsGetRequest(
        since: since?.instant(now: now), until: until?.instant(now: now), tips: tips, cuped: cuped)
      var params = request.encodedParams?.objectValue ?? [:]
      if let account { params["account"] = .string(account) }
      let response = try client.result(MetricsGetRequest.self, .object(params))
      switch output {
      case .json: print(response.json.prettyString())
      case .csv: print(MetricsTable.csv(response.report), terminator: "")
      case .table: print(MetricsTable.text(response.report), terminator: "")
      }
      return 0
    } catch {
      Console.error("tipsd metrics: \(error)\n")
      return 1
    }
  }
}
