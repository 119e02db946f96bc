import TipsCatalog
import TipsLanguageServer
import TipsLogging
import TipsServer

#if canImport(Glibc)
  import Glibc
#endif

/// `tipsd lsp [--socket PATH | --no-live] [--id-pattern PATTERN]`: a Language Server Protocol 3.17 server on stdin and
/// stdout for catalogs and translators' message files (``LanguageServer``). Logs go to stderr.
struct LspCommand: Command {
  static let name = "lsp"
  static let abstract = "a language server (LSP 3.17, stdio) for catalogs and message files"
  static let usage = "tipsd lsp [--socket PATH | --no-live] [--id-pattern PATTERN]"
  static let discussion = """
    A Language Server Protocol 3.17 server on stdin/stdout (Content-Length framing) for tipsd catalogs and
    translators' messages/{locale}.json files: lint diagnostics as you type (with a quick fix for a
    misspelt event), completion of event, parameter and tip ids and of keys, hover explaining a rule,
    go to definition of events, parameters and group members. Logs go to stderr.
    Exit status: 0 after shutdown and exit, 1 on exit without shutdown or when the input ends first.
    """
  static let options: [Option<LspCommand>] = [
    .value(
      "--socket", as: "PATH",
      help: """
        the daemon hover asks for a rule's live value (tips/explain); default:
        the default socket ($XDG_RUNTIME_DIR/tipsd/tipsd.sock, else /tmp/tipsd-UID/tipsd.sock)
        """
    ) { $0.socket = $1.text },
    .flag("--no-live", help: "never ask a daemon") { $0.socket = nil },
    .value("--id-pattern", as: "PATTERN", help: "as tipsd lint: feature.purpose (default), any, or a regex") {
      command, value throws(UsageError) in
      command.lint.idPattern = try LintCommand.idPattern(value)
    },
    .flag("--stdio", help: "accepted and ignored (editors' LSP clients often pass it)") { _ in },
  ]

  /// The daemon asked for live values; nil: none.
  var socket: String?
  var lint = LintOptions()

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    socket = DaemonOptions.defaultSocketPath(environment: environment)
    try Arguments.parse(arguments, into: &self, options: Self.options)
  }

  func run() -> Int32 {
    // A client that goes away mid-write must end the server with an error, not a signal.
    signal(SIGPIPE, SIG_IGN)
    let logger = Logger(handler: PlainStderrLogHandler())
    let server = LanguageServer(
      options: LanguageServerOptions(serverVersion: TipsdVersion.server, lint: lint),
      live: socket.map { DaemonLiveValues(socketPath: $0) }, logger: logger)
    logger.info("tipsd lsp \(TipsdVersion.server): serving on stdin/stdout; live values from \(socket ?? "no daemon")")
    return LanguageServerRunner.run(server, logger: logger)
  }
}
