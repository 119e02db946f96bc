import TipsProtocol
import TipsServer

/// `tipsd`: finds the subcommand, parses its arguments, runs it. The executable only calls
/// ``main(_:environment:)``.
public enum TipsdCommand {
  /// Every subcommand, in the order the overview lists them.
  static var commands: [any Command.Type] {
    [
      ServeCommand.self, CallCommand.self, TokenCommand.self, TestCommand.self, LintCommand.self,
      StringsExportCommand.self, StringsImportCommand.self, LspCommand.self, MetricsCommand.self, InspectCommand.self,
      ReportCommand.self, SyncStatusCommand.self, CatalogPublishCommand.self, CatalogDiffCommand.self,
      CatalogRollbackCommand.self, CatalogScheduleCommand.self, CatalogHistoryCommand.self,
    ]
  }

  /// `tipsd --help`: the subcommands with their abstracts (built from ``commands``) and examples.
  public static var overview: String {
    var rows = commands.map { ($0.name, $0.abstract) }
    rows += [
      ("help [COMMAND]", "this text, or a command's options"), ("version", "tipsd's and its protocol's versions"),
    ]
    let width = rows.map(\.0.count).max() ?? 0
    var text = """
      tipsd — TipKit's eligibility engine as a JSON-RPC 2.0 daemon

      usage: tipsd COMMAND [OPTIONS]   (tipsd COMMAND --help lists a command's options)

      COMMANDS

      """
    for (name, abstract) in rows {
      text += "  " + name + String(repeating: " ", count: width - name.count + 3) + abstract + "\n"
    }
    text += """

      EXAMPLES
        tipsd serve --socket /tmp/tipsd.sock --catalog catalog/demo.json
        tipsd call --socket /tmp/tipsd.sock events/donate '{"id": "search.opened"}'
        tipsd call --socket /tmp/tipsd.sock tips/explain '{"id": "filter.tip"}'
        tipsd serve --listen 127.0.0.1:8787 --catalog catalog/demo.json; tipsd token
        tipsd lint catalog/demo.json --messages catalog/messages --simulate
        tipsd serve --sync postgresql://tipsd@db.example/tips --account alice --catalog catalog/demo.json

      """
    return text
  }

  /// Runs the command line; returns the process exit status (2 for a usage error).
  public static func main(_ arguments: [String], environment: [String: String]) -> Int32 {
    let words = Array(arguments.dropFirst())
    guard let first = words.first else {
      Console.error(overview)
      return 2
    }
    switch first {
    case "help", "--help", "-h":
      let topic = words.dropFirst().joined(separator: " ")
      guard !topic.isEmpty else {
        print(overview, terminator: "")
        return 0
      }
      guard let command = commands.first(where: { $0.name == topic }) else {
        return refuse("unknown command \"\(topic)\"", among: commands)
      }
      print(command.help, terminator: "")
      return 0
    case "version", "--version":
      print("tipsd \(TipsdVersion.server) (protocol \(ProtocolVersion.current))")
      return 0
    default:
      break
    }
    // The longest name the words start with: `strings export` before a command named `strings`, were there one.
    let matching = commands.filter { command in
      let name = command.name.split(separator: " ").map(String.init)
      return words.starts(with: name)
    }
    guard let command = matching.max(by: { $0.name.count < $1.name.count }) else {
      // A group (`strings`) alone, with --help, or with an unknown verb.
      let group = commands.filter { $0.name.hasPrefix(first + " ") }
      guard !group.isEmpty else { return refuse("unknown command \"\(first)\"", among: commands) }
      guard let verb = words.dropFirst().first else { return refuse("\(first) needs a command", among: group) }
      guard verb == "--help" || verb == "-h" else {
        return refuse("unknown command \"\(first) \(verb)\"", among: group)
      }
      print(group.map { "usage: " + $0.usage + "\n  " + $0.abstract }.joined(separator: "\n\n"))
      return 0
    }
    return run(command, Array(words.dropFirst(command.name.split(separator: " ").count)), environment: environment)
  }

  /// Parses and runs one command: a usage error is exit status 2 with the usage on stderr, `--help` status 0.
  static func run<C: Command>(_ type: C.Type, _ arguments: [String], environment: [String: String]) -> Int32 {
    let command: C
    do throws(UsageError) {
      command = try C(parsing: arguments, environment: environment)
    } catch {
      switch error {
      case .helpRequested:
        print(C.help, terminator: "")
        return 0
      case .invalid(let message):
        Console.error(C.usageError(message))
        return 2
      }
    }
    return command.run()
  }

  /// A command line naming no command: exit status 2, the commands it could have named on stderr.
  static func refuse(_ problem: String, among commands: [any Command.Type]) -> Int32 {
    let names = commands.map { $0.name }.joined(separator: ", ")
    Console.error("tipsd: \(problem) (one of: \(names); tipsd --help says more)\n")
    return 2
  }
}
