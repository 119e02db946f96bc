import TipsClient
import TipsJSON
import TipsProtocol

#if canImport(Glibc)
  import Glibc
#endif

/// `tipsd inspect`: every tip, event, parameter and group of a running daemon, now (`inspect/state`); with `--watch`,
/// redrawn on every change, across daemon restarts.
struct InspectCommand: Command {
  static let name = "inspect"
  static let abstract = "every tip, event, parameter and group, now (--watch: redrawn on every change)"
  static let usage = "tipsd inspect [--socket PATH] [--timeout SECONDS] [--watch] [--json]"
  static let options =
    DaemonOptions.options(\InspectCommand.daemon) + [
      .flag("--watch", help: "redraw after every change; reconnect when the daemon restarts") { $0.watch = true },
      .flag("--json", help: "inspect/state's result as JSON (one line per change with --watch)") { $0.json = true },
    ]

  var daemon: DaemonOptions
  var watch = false
  var json = false

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    daemon = DaemonOptions(environment: environment)
    try Arguments.parse(arguments, into: &self, options: Self.options)
  }

  func run() -> Int32 {
    let terminal = isatty(STDOUT_FILENO) == 1
    func show(_ state: InspectState) {
      if json {
        print(watch ? state.json.jsonString : state.json.prettyString())
      } else {
        // On a terminal each redraw replaces the last; otherwise (a pipe, a file) each view follows the last.
        if terminal && watch { print("\u{1B}[H\u{1B}[2J", terminator: "") }
        print(InspectText.render(state), terminator: watch && !terminal ? "\n" : "")
      }
      fflush(nil)
    }
    guard watch else {
      do {
        let client = try daemon.connect(as: "tipsd inspect")
        defer { client.close() }
        show(try client.send(InspectStateRequest()).state)
        return 0
      } catch {
        Console.error("tipsd inspect: \(error)\n")
        return 1
      }
    }
    // --watch: redraw after each inspect/changed; when the daemon goes away (a restart), reconnect and go on.
    var delay = 0.25
    var announced = false
    while true {
      do {
        let client = try daemon.connect(as: "tipsd inspect --watch")
        defer { client.close() }
        if announced { Console.error("tipsd inspect: reconnected\n") }
        announced = false
        delay = 0.25
        while true {
          show(try client.send(InspectStateRequest(watch: true)).state)
          var changed: JSONValue?
          while changed == nil {
            changed = try client.nextNotification(InspectChangedNotification.method, timeout: 3_600)
            if changed == nil && client.atEndOfInput { throw ClientError("the daemon closed the connection") }
          }
        }
      } catch {
        if !announced {
          Console.error("tipsd inspect: \(error); reconnecting\n")
          announced = true
        }
        usleep(useconds_t(delay * 1_000_000))
        delay = min(delay * 2, 5)
      }
    }
  }
}
