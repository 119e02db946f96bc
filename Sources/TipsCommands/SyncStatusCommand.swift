import TipsClient
import TipsProtocol
import TipsSystem

/// `tipsd sync status [--socket PATH] [--timeout SECONDS] [--json]`: asks the running daemon for `sync/status` and
/// prints it as `name: value` lines (or the JSON result). Exit status 0 when sync is enabled, 1 when it is not or the
/// daemon cannot be reached.
struct SyncStatusCommand: Command {
  static let name = "sync status"
  static let abstract = "outbox, lag, last push and pull of sync across devices"
  static let usage = "tipsd sync status [--socket PATH] [--timeout SECONDS] [--json]"
  static let discussion = "Exit status: 0 when the daemon syncs, 1 when it does not (or cannot be reached)."
  static let options =
    DaemonOptions.options(\SyncStatusCommand.daemon) + [
      .flag("--json", help: "print sync/status's result as JSON") { $0.json = true }
    ]

  var daemon: DaemonOptions
  var json = false

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    daemon = DaemonOptions(environment: environment)
    try Arguments.parse(arguments, into: &self, options: Self.options)
  }

  func run() -> Int32 {
    let status: SyncStatusRequest.Response
    do {
      let client = try daemon.connect(as: "tipsd sync")
      defer { client.close() }
      status = try client.send(SyncStatusRequest())
    } catch {
      Console.error("tipsd sync status: \(error)\n")
      return 1
    }
    if json {
      print(status.json.prettyString())
    } else {
      print(Self.lines(status, now: System.wallClockSeconds()).joined(separator: "\n"))
    }
    return status.enabled ? 0 : 1
  }

  /// The status as `name: value` lines.
  static func lines(_ status: SyncStatusRequest.Response, now: Double) -> [String] {
    guard status.enabled else { return ["state: disabled (start tipsd serve with --sync URL --account ID)"] }
    func instant(_ at: Double?) -> String {
      guard let at else { return "never" }
      return "\(Format.instant(at)) (\(Format.fixed(max(0, now - at), 1)) s ago)"
    }
    return [
      "state: \(status.state)",
      "server: \(status.server ?? "none")",
      "account: \(status.account ?? "none")",
      "device: \(status.device ?? "none")",
      "outbox: \(status.outbox)\(status.outboxLimit.map { " (limit \($0))" } ?? "")",
      "lag: \(Format.fixed(status.lagSeconds, 1)) s",
      "cursor: \(status.cursor)",
      "last push: \(instant(status.lastPushAt))",
      "last pull: \(instant(status.lastPullAt))",
      "last error: \(status.lastError ?? "none")",
    ]
  }
}
