#if canImport(Glibc)
  import Glibc
#endif
import TipsJSON
import TipsStore
import TipsSync
import TipsTransport
import TipsCatalog
import TipsSystem

/// `tipsd` — the command line. The executable only calls ``TipsdCommand/main(_:environment:)``.
public enum TipsdCommand {
  public static let usage = """
    tipsd — TipKit's eligibility engine as a JSON-RPC 2.0 daemon

    USAGE
      tipsd serve [--stdio | --socket PATH] [options]   run the daemon
      tipsd call [--socket PATH] METHOD [PARAMS-JSON]   send one request, print the result as JSON
      tipsd token [--socket PATH | --token-file PATH]   print the WebSocket listener's token
      tipsd test [--junit FILE] TRANSCRIPT...           run bridge-contract transcripts in-process
      tipsd lint CATALOG [--messages DIR] [--format text|json|github] [--id-pattern P] [--simulate]
                                                        check a catalog: the ship-day checklist (exit 1 on errors)
      tipsd strings export|import CATALOG …             translators' files: json, .strings, .xcstrings, .xliff
      tipsd lsp [--socket PATH | --no-live]             a language server (LSP 3.17, stdio) for catalogs and
                                                        message files: diagnostics, completion, hover, definition
      tipsd metrics [--since 7d] [--json | --csv]       seed 000's metrics per tip and variant, as a table
      tipsd inspect [--watch] [--json]                  every tip, event, parameter and group, now (--watch:
                                                        redrawn on every change, across daemon restarts)
      tipsd report --html FILE [--since 7d]             a self-contained static HTML report
      tipsd sync status [--socket PATH] [--json]        outbox, lag, last push and pull of sync across devices
      tipsd help | --help                               this text
      tipsd version | --version

    SERVE OPTIONS
      --stdio                  serve one client on stdin/stdout (logs go to stderr); exit when stdin closes
      --socket PATH            serve many clients on a Unix socket (mode 0600); default:
                               $XDG_RUNTIME_DIR/tipsd/tipsd.sock, else /tmp/tipsd-UID/tipsd.sock
      --datastore PATH         SQLite datastore; default $XDG_DATA_HOME/tipsd/default.sqlite
                               (else ~/.local/share/tipsd/default.sqlite); ":memory:" keeps nothing
      --fsync                  commit with synchronous=FULL: acknowledged writes survive power loss,
                               not only a crash of the daemon (slower)
      --datastore-recover      if the datastore is unreadable, move it aside (timestamped) and start fresh
      --catalog FILE           register the tips, parameters and groups of a catalog file at start;
                               SIGHUP or catalog/reload reloads it (a broken edit keeps the old one)
      --messages DIR           translators' files DIR/{locale}.json (seed 000's `tipkit.<tipId>.title` keys),
                               merged into the catalog's copy; checked like the catalog at start
                               (default: a `messages` directory beside the catalog, if there is one)
      --watch                  reload the catalog whenever its file (or a message file) changes
      --clock system|virtual   virtual: time moves only through clock/advance and clock/set (tests)
      --clock-start SECONDS    the virtual clock's first instant (default: now)
      --allow-testing          answer testing/*, datastore/reset, clock/advance and clock/set (tests and
                               development only; refused with -32011 otherwise)
      --strict-events          refuse donations of events the catalog does not declare (-32602)
      --install-id ID          the install id A/B variants are assigned from (default: initialize's
                               installId, else a random id kept in the datastore)
      --log-level LEVEL        trace, debug, info (default), notice, warning, error
      --max-connections N      default 256
      --max-message-size BYTES default 1048576
      --partial-timeout SECONDS  close a connection whose message stays incomplete this long (default 30)
      --queue-limit BYTES      per-connection outgoing queue bound (default 4194304)
      --allow-uid UID          also accept socket clients running as UID (repeatable); by default only
                               the daemon's own uid may connect (checked with SO_PEERCRED)

    HISTORY AND METRICS
      --history-days DAYS      keep this many days of lifecycle history (impressions, eligibility changes,
                               invalidations, actions, variants, goal and app-closed donations) for
                               analytics/* and metrics/get (default 90; 0 records none)
      --app-closed-event NAME  the event the app donates when it goes to the background (e.g.
                               app.backgrounded): enables the close rate after an impression
      --close-window SECONDS   an app close this soon after an impression counts against the tip (default 10)
      --close-rate-alert RATIO flag tips whose close rate is above RATIO (e.g. 0.2)
      --baseline-days DAYS     compare the goal's daily rate this many days before and after a tip's first
                               impression (default 7)
    SYNC ACROSS DEVICES (off unless --sync is given; see README "Sync across devices")
      --sync URL               sync this account's tip state with its other devices through PostgreSQL:
                               postgresql://USER[:PASSWORD]@HOST[:PORT]/DB or a libpq "key=value" string
                               (the password is never logged). tipsd creates and migrates a `tipsd` schema
      --account ID             whose state this is (required with --sync); a datastore syncs one account
      --device ID              this device's id (default: a random id made on first start, kept in the datastore)
      --sync-outbox-limit N    refuse synced changes (-32012) while N operations wait for PostgreSQL
                               (default 100000; queued operations are merged first where the merge allows)

    HTTP AND WEBSOCKET (off unless --listen is given)
      --listen HOST:PORT       also serve HTTP/1.1 and WebSocket on HOST:PORT (repeatable): 127.0.0.1:8787,
                               [::1]:8787, localhost:8787; port 0 picks a free port (logged). One JSON-RPC
                               message per text frame; GET /healthz answers without a token, GET /metrics
                               (Prometheus) with Authorization: Bearer <token>, GET / is the web inspector
      --token-file PATH        the token WebSocket clients must present (default: `token` beside the
                               socket); created (mode 0600) when missing, kept across restarts
      --allow-origin ORIGIN    also accept browser pages from ORIGIN, e.g. http://localhost:8081 (repeatable)
      --tls-cert FILE          PEM certificate: serve wss:// and https:// (needed for a non-loopback HOST)
      --tls-key FILE           its PEM private key
      --ping-interval SECONDS  ping quiet WebSocket peers this often; close those silent for two (default 15)

    EXAMPLES
      tipsd serve --socket /tmp/tipsd.sock --catalog catalog/demo.json
      tipsd call --socket /tmp/tipsd.sock events/donate '{"id": "search.opened"}'
      tipsd call --socket /tmp/tipsd.sock tips/explain '{"id": "filter.tip"}'
      tipsd serve --listen 127.0.0.1:8787 --catalog catalog/demo.json; tipsd token
      tipsd lint catalog/demo.json --messages catalog/messages --simulate
      tipsd serve --sync postgresql://tipsd@db.example/tips --account alice --catalog catalog/demo.json
    """

  /// Runs the command line; returns the process exit status.
  public static func main(_ arguments: [String], environment: [String: String]) -> Int32 {
    var args = Array(arguments.dropFirst())
    guard let command = args.first else {
      writeStderr(usage + "\n")
      return 2
    }
    args.removeFirst()
    switch command {
    case "serve": return serve(args, environment: environment)
    case "call": return CallCommand.run(args, environment: environment)
    case "token": return token(args, environment: environment)
    case "test": return TestCommand.run(args, environment: environment)
    case "lint": return LintCommand.run(args)
    case "strings": return StringsCommand.run(args)
    case "lsp": return LspCommand.run(args, environment: environment)
    case "metrics": return MetricsCommand.run(args, environment: environment)
    case "inspect": return InspectCommand.run(args, environment: environment)
    case "report": return ReportCommand.run(args, environment: environment)
    case "sync": return SyncCommand.run(args, environment: environment)
    case "help", "--help", "-h":
      print(usage)
      return 0
    case "version", "--version":
      print("tipsd \(TipsdVersion.server) (protocol \(TipsdVersion.protocolVersion))")
      return 0
    default:
      writeStderr("tipsd: unknown command \"\(command)\"\n\n\(usage)\n")
      return 2
    }
  }

  /// Parses `serve` options into a configuration (separate from running, for tests).
  public static func parseServe(_ args: [String], environment: [String: String]) throws(ServerError)
    -> ServerConfiguration
  {
    var configuration = ServerConfiguration()
    configuration.listen = .socket(path: defaultSocketPath(environment: environment))
    configuration.datastorePath = Datastore.defaultPath(environment: environment)
    var virtualStart: Double?
    var clockName = "system"
    var syncServer: String?
    var syncAccount: String?
    var syncDevice: String?
    var syncOutboxLimit: Int?
    var index = 0
    func value(_ flag: String) throws(ServerError) -> String {
      index += 1
      guard index < args.count else { throw ServerError("\(flag) needs a value (see tipsd --help)") }
      return args[index]
    }
    func number(_ flag: String) throws(ServerError) -> Double {
      let text = try value(flag)
      guard let n = Double(text), n.isFinite else { throw ServerError("\(flag): \"\(text)\" is not a number") }
      return n
    }
    func positive(_ flag: String) throws(ServerError) -> Int {
      let text = try value(flag)
      guard let n = Int(text), n > 0 else { throw ServerError("\(flag): \"\(text)\" is not a positive integer") }
      return n
    }
    while index < args.count {
      let flag = args[index]
      switch flag {
      case "--stdio": configuration.listen = .stdio
      case "--socket": configuration.listen = .socket(path: try value(flag))
      case "--datastore": configuration.datastorePath = try value(flag)
      case "--fsync": configuration.fsync = true
      case "--datastore-recover": configuration.recoverDatastore = true
      case "--catalog": configuration.catalogPath = try value(flag)
      case "--messages": configuration.messagesDirectory = try value(flag)
      case "--clock": clockName = try value(flag)
      case "--clock-start": virtualStart = try number(flag)
      case "--log-level":
        let name = try value(flag)
        guard let level = LogLevel(name: name) else {
          throw ServerError("--log-level: unknown level \"\(name)\" (trace, debug, info, notice, warning, error)")
        }
        configuration.logLevel = level
      case "--max-connections": configuration.maxConnections = try positive(flag)
      case "--max-message-size": configuration.maxMessageSize = try positive(flag)
      case "--partial-timeout": configuration.partialMessageTimeout = try number(flag)
      case "--queue-limit": configuration.outgoingQueueLimit = try positive(flag)
      case "--listen":
        let text = try value(flag)
        do {
          configuration.web.addresses.append(try ListenAddress(parsing: text))
        } catch {
          throw ServerError(error.message)
        }
      case "--token-file": configuration.web.tokenFile = try value(flag)
      case "--allow-origin": configuration.web.allowedOrigins.insert(try value(flag))
      case "--tls-cert": configuration.web.tlsCertificate = try value(flag)
      case "--tls-key": configuration.web.tlsKey = try value(flag)
      case "--ping-interval":
        let seconds = try number(flag)
        guard seconds > 0 else { throw ServerError("--ping-interval: must be a positive number of seconds") }
        configuration.web.pingInterval = seconds
      case "--allow-uid":
        let text = try value(flag)
        guard let uid = UInt32(text) else { throw ServerError("--allow-uid: \"\(text)\" is not a uid") }
        configuration.allowedPeerUIDs.insert(uid)
      case "--history-days":
        let days = try number(flag)
        guard days >= 0 else { throw ServerError("--history-days: must be 0 or a positive number of days") }
        configuration.historyDays = days
      case "--app-closed-event":
        let name = try value(flag)
        guard !name.isEmpty else { throw ServerError("--app-closed-event: must not be empty") }
        configuration.appClosedEvent = name
      case "--close-window":
        let seconds = try number(flag)
        guard seconds > 0 else { throw ServerError("--close-window: must be a positive number of seconds") }
        configuration.closeWindow = seconds
      case "--close-rate-alert":
        let ratio = try number(flag)
        guard ratio >= 0, ratio <= 1 else { throw ServerError("--close-rate-alert: must be a ratio from 0 to 1") }
        configuration.closeRateAlert = ratio
      case "--baseline-days":
        let days = try number(flag)
        guard days > 0 else { throw ServerError("--baseline-days: must be a positive number of days") }
        configuration.baselineDays = days
      case "--allow-testing": configuration.allowTesting = true
      case "--watch": configuration.watchCatalog = true
      case "--strict-events": configuration.strictEvents = true
      case "--install-id":
        let id = try value(flag)
        guard !id.isEmpty else { throw ServerError("--install-id: must not be empty") }
        configuration.installID = id
      case "--sync": syncServer = try value(flag)
      case "--account":
        let id = try value(flag)
        guard !id.isEmpty else { throw ServerError("--account: must not be empty") }
        syncAccount = id
      case "--device":
        let id = try value(flag)
        guard !id.isEmpty else { throw ServerError("--device: must not be empty") }
        syncDevice = id
      case "--sync-outbox-limit": syncOutboxLimit = try positive(flag)
      case "--help", "-h": throw ServerError(usage)
      default: throw ServerError("unknown option \"\(flag)\" (see tipsd --help)")
      }
      index += 1
    }
    let web = configuration.web
    if (web.tlsCertificate == nil) != (web.tlsKey == nil) {
      throw ServerError("--tls-cert and --tls-key go together (a PEM certificate and its private key)")
    }
    if web.tlsCertificate == nil, let remote = web.addresses.first(where: { !$0.isLoopback }) {
      throw ServerError(
        "--listen \(remote): a non-loopback address needs TLS (--tls-cert and --tls-key); without it the token and "
          + "every message would cross the network in clear text. Use 127.0.0.1 (with `adb reverse` for an Android "
          + "device) or give a certificate")
    }
    if !web.isEnabled && (web.tokenFile != nil || !web.allowedOrigins.isEmpty || web.tlsCertificate != nil) {
      throw ServerError("--token-file, --allow-origin and --tls-* need --listen HOST:PORT")
    }
    if let syncServer {
      guard let syncAccount else { throw ServerError("--sync needs --account ID (whose state this is)") }
      do {
        _ = try SyncServer(syncServer)
      } catch {
        throw ServerError(error.message)
      }
      var sync = SyncConfiguration(server: syncServer, account: syncAccount, device: syncDevice)
      if let syncOutboxLimit { sync.outboxLimit = syncOutboxLimit }
      configuration.sync = sync
    } else if syncAccount != nil || syncDevice != nil || syncOutboxLimit != nil {
      throw ServerError("--account, --device and --sync-outbox-limit need --sync URL")
    }
    switch clockName {
    case "system":
      if virtualStart != nil { throw ServerError("--clock-start needs --clock virtual") }
    case "virtual": configuration.clock = .virtual(start: virtualStart ?? SystemTime.now())
    default: throw ServerError("--clock: expected system or virtual (got \"\(clockName)\")")
    }
    // Translators' files live beside the catalog by default (`catalog/messages/` for `catalog/app.json`).
    if configuration.messagesDirectory == nil, let catalog = configuration.catalogPath {
      configuration.messagesDirectory = CatalogLoader.messagesDirectory(besideCatalog: catalog)
    }
    return configuration
  }

  static func serve(_ args: [String], environment: [String: String]) -> Int32 {
    var configuration: ServerConfiguration
    do {
      configuration = try parseServe(args, environment: environment)
    } catch {
      writeStderr("tipsd serve: \(error)\n")
      return 2
    }
    let logger = Logger(level: configuration.logLevel)
    do {
      if case .socket(let path) = configuration.listen { try prepareSocketDirectory(for: path) }
      if configuration.web.isEnabled, configuration.web.tokenFile == nil {
        // Beside the socket (the default socket's directory under --stdio).
        let socket: String
        if case .socket(let path) = configuration.listen { socket = path } else { socket = defaultSocketPath(environment: environment) }
        try prepareSocketDirectory(for: socket)
        configuration.web.tokenFile = TokenFile.defaultPath(socketPath: socket)
      }
    } catch {
      logger.error("\(error)")
      return 1
    }
    logger.info(
      "starting tipsd \(TipsdVersion.server)",
      [
        ("datastore", configuration.datastorePath == ":memory:" ? ":memory:" : absolutePath(configuration.datastorePath)),
        ("catalog", configuration.catalogPath.map(absolutePath) ?? "none"),
        ("messages", configuration.messagesDirectory.map(absolutePath) ?? "none"),
        ("clock", configuration.clock == .system ? "system" : "virtual"),
      ])
    do {
      let exit = try Daemon.run(configuration: configuration, logger: logger)
      logger.info("stopped")
      return exit == .clean ? 0 : 1
    } catch {
      logger.error("\(error)")
      return 1
    }
  }

  /// `tipsd token [--socket PATH | --token-file PATH]`: prints the listener's token (for a development app's config).
  static func token(_ args: [String], environment: [String: String]) -> Int32 {
    var path = TokenFile.defaultPath(socketPath: defaultSocketPath(environment: environment))
    var index = 0
    while index < args.count {
      switch args[index] {
      case "--socket" where index + 1 < args.count:
        index += 1
        path = TokenFile.defaultPath(socketPath: args[index])
      case "--token-file" where index + 1 < args.count:
        index += 1
        path = args[index]
      case "--help", "-h":
        print("usage: tipsd token [--socket PATH | --token-file PATH]")
        return 0
      default:
        writeStderr("usage: tipsd token [--socket PATH | --token-file PATH]\n")
        return 2
      }
      index += 1
    }
    do {
      print(try TokenFile.read(path))
      return 0
    } catch {
      writeStderr("tipsd token: \(error)\n")
      return 1
    }
  }

  /// `$XDG_RUNTIME_DIR/tipsd/tipsd.sock`, else `/tmp/tipsd-UID/tipsd.sock`.
  public static func defaultSocketPath(environment: [String: String]) -> String {
    if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
      return "\(runtime)/tipsd/tipsd.sock"
    }
    return "/tmp/tipsd-\(getuid())/tipsd.sock"
  }

  /// Creates the socket's directory (mode 0700) when missing; refuses one that another user owns.
  static func prepareSocketDirectory(for path: String) throws(ServerError) {
    guard let slash = path.lastIndex(of: "/") else { return }
    let directory = String(path[..<slash])
    guard !directory.isEmpty else { return }
    var info = stat()
    if stat(directory, &info) != 0 {
      guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
        throw ServerError("cannot create the socket directory \(directory): \(String(cString: strerror(errno)))")
      }
      return
    }
    guard info.st_uid == getuid() || info.st_mode & S_ISVTX != 0 else {
      throw ServerError("the socket directory \(directory) belongs to another user; choose another --socket path")
    }
  }

  /// The path resolved for the startup log: symlinks and `..` resolved (`realpath`), or for a file that does not
  /// exist yet (a new datastore) its resolved directory plus its name; else made absolute against the cwd.
  static func absolutePath(_ path: String) -> String {
    if let resolved = realPath(path) { return resolved }
    if let slash = path.lastIndex(of: "/") {
      let directory = slash == path.startIndex ? "/" : String(path[..<slash])
      if let resolved = realPath(directory) {
        return (resolved == "/" ? "" : resolved) + "/" + path[path.index(after: slash)...]
      }
    } else if let cwd = realPath(".") {
      return (cwd == "/" ? "" : cwd) + "/" + path
    }
    if path.hasPrefix("/") { return path }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard getcwd(&buffer, buffer.count) != nil else { return path }
    let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return cwd + "/" + path
  }

  static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}

/// Real time, for defaults.
enum SystemTime {
  static func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
  }
}
