import TipsClient
import TipsProtocol
import TipsSystem

/// `tipsd report --html FILE`: a self-contained static HTML report of a running daemon — the metrics and the
/// inspector's view (`metrics/get`, `inspect/state`).
struct ReportCommand: Command {
  static let name = "report"
  static let abstract = "a self-contained static HTML report: metrics, tips, events"
  static let usage = "tipsd report --html FILE [--socket PATH] [--timeout SECONDS] [--since WHEN] [--until WHEN]"
  static let discussion = "WHEN: " + Since.help
  static let options =
    [
      .value("--html", as: "FILE", help: "where the report goes (replaced atomically)") { $0.file = $1.text }
    ] + DaemonOptions.options(\ReportCommand.daemon) + [
      .value("--since", as: "WHEN", help: "the metrics from this instant (default: all kept)") {
        command, value throws(UsageError) in command.since = try Since(value)
      },
      .value("--until", as: "WHEN", help: "the metrics before this instant (default: now)") {
        command, value throws(UsageError) in command.until = try Since(value)
      },
    ]

  var daemon: DaemonOptions
  var file = ""
  var since: Since?
  var until: Since?

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    daemon = DaemonOptions(environment: environment)
    try Arguments.parse(arguments, into: &self, options: Self.options)
    guard !file.isEmpty else { throw .invalid("--html FILE is required") }
  }

  func run() -> Int32 {
    do {
      let client = try daemon.connect(as: "tipsd report")
      defer { client.close() }
      let state = try client.send(InspectStateRequest()).state
      let metrics = try client.send(
        MetricsGetRequest(since: since?.instant(now: state.now), until: until?.instant(now: state.now))
      ).report
      try System.writeFile(file, Array(ReportHTML.render(state: state, metrics: metrics).utf8))
      print("wrote \(file)")
      return 0
    } catch let error as ClientError {
      Console.error("tipsd report: \(error)\n")
      return 1
    } catch {
      Console.error("tipsd report: cannot write \(file): \(error)\n")
      return 1
    }
  }
}
