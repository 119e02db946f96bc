import TipsClient
import TipsProtocol

/// `tipsd metrics`: seed 000's metrics per tip and variant from a running daemon (`metrics/get`), as a table, CSV or
/// JSON.
struct MetricsCommand: Command {
  static let name = "metrics"
  static let abstract = "seed 000's metrics per tip and variant, as a table (or CSV, or JSON)"
  static let usage =
    "tipsd metrics [--socket PATH] [--timeout SECONDS] [--since WHEN] [--until WHEN] [--tips ID,ID] [--json | --csv]"
  static let discussion = "WHEN: " + Since.help

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
      .flag("--json", help: "metrics/get's result as JSON") { $0.output = .json },
      .flag("--csv", help: "one row per tip and variant, a column per number") { $0.output = .csv },
    ]

  var daemon: DaemonOptions
  var since: Since?
  var until: Since?
  var tips: [String]?
  var output = Output.table

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    daemon = DaemonOptions(environment: environment)
    try Arguments.parse(arguments, into: &self, options: Self.options)
  }

  func run() -> Int32 {
    do {
      let client = try daemon.connect(as: "tipsd metrics")
      defer { client.close() }
      let now = try client.send(ClockNowRequest()).now
      let response = try client.send(
        MetricsGetRequest(since: since?.instant(now: now), until: until?.instant(now: now), tips: tips))
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
