#if canImport(Glibc)
  import Glibc
#endif
import TipsCatalog
import TipsLanguageServer

/// `tipsd lsp [--socket PATH | --no-live] [--id-pattern PATTERN]`: a Language Server Protocol 3.17 server on stdin and
/// stdout for catalogs and translators' message files (``LanguageServer``). Logs go to stderr.
enum LspCommand {
  static let usage = """
    usage: tipsd lsp [--socket PATH | --no-live] [--id-pattern PATTERN]

    A Language Server Protocol 3.17 server on stdin/stdout (Content-Length framing) for tipsd catalogs and
    translators' messages/{locale}.json files: lint diagnostics as you type (with a quick fix for a
    misspelt event), completion of event, parameter and tip ids and of keys, hover explaining a rule,
    go to definition of events, parameters and group members. Logs go to stderr.
      --socket PATH         the daemon hover asks for a rule's live value (tips/explain); default:
                            the default socket ($XDG_RUNTIME_DIR/tipsd/tipsd.sock, else /tmp/tipsd-UID/tipsd.sock)
      --no-live             never ask a daemon
      --id-pattern PATTERN  as tipsd lint: feature.purpose (default), any, or a regex
      --stdio               accepted and ignored (editors' LSP clients often pass it)
    Exit status: 0 after shutdown and exit, 1 on exit without shutdown or when the input ends first.
    """

  static func run(_ args: [String], environment: [String: String]) -> Int32 {
    var socket: String? = TipsdCommand.defaultSocketPath(environment: environment)
    var lint = LintOptions()
    var index = 0
    func usageError(_ message: String) -> Int32 {
      writeStderr("tipsd lsp: \(message)\n\(usage)\n")
      return 2
    }
    while index < args.count {
      let arg = args[index]
      switch arg {
      case "--socket":
        guard index + 1 < args.count else { return usageError("--socket needs a path") }
        index += 1
        socket = args[index]
      case "--no-live": socket = nil
      case "--id-pattern":
        guard index + 1 < args.count else { return usageError("--id-pattern needs a pattern") }
        index += 1
        do {
          lint.idPattern = try IDPattern(parsing: args[index])
        } catch {
          return usageError("--id-pattern: \(error.message)")
        }
      case "--stdio": break
      case "--help", "-h":
        print(usage)
        return 0
      default: return usageError("unexpected argument \"\(arg)\"")
      }
      index += 1
    }
    // A client that goes away mid-write must end the server with an error, not a signal.
    signal(SIGPIPE, SIG_IGN)
    let server = LanguageServer(
      options: LanguageServerOptions(serverVersion: TipsdVersion.server, lint: lint),
      live: socket.map { DaemonLiveValues(socketPath: $0) },
      log: { writeStderr($0 + "\n") })
    writeStderr(
      "tipsd lsp \(TipsdVersion.server): serving on stdin/stdout; live values from \(socket ?? "no daemon")\n")
    return LanguageServerRunner.run(server, log: { writeStderr($0 + "\n") })
  }
}
