import TipsCatalog
import TipsLogging
public import TipsServer
import TipsStore
import TipsSync
import TipsSystem
import TipsTransport

#if canImport(Glibc)
  import Glibc
#endif

/// `tipsd serve`: reads its options into a ``ServerConfiguration`` and runs the daemon until it stops.
public struct ServeCommand: Command {
  public static let name = "serve"
  public static let abstract = "run the daemon: one client on stdio, or many on a Unix socket (and HTTP/WebSocket)"
  public static let usage = "tipsd serve [--stdio | --socket PATH] [OPTIONS]"

  /// `--clock`.
  enum ClockName: String, CaseIterable {
    case system, virtual
  }

  /// `--sync`, `--account`, `--device`, `--sync-outbox-limit`: checked together once all are read.
  struct SyncOptions {
    var server: String?
    var account: String?
    var device: String?
    var outboxLimit: Int?
    /// `--sync-token-command` / `--sync-token-file` (a hosted node's `ws://`/`wss://` URL).
    var tokenSource: SyncTokenSource?
  }

  /// `--hosted` and its options: checked together once all are read.
  struct HostedOptions {
    var server: String?
    var node: String?
    /// The other hosted flags' values (each flag sets its field; defaults otherwise).
    var settings = HostedConfiguration(server: "", node: "")
    /// `--jwt-any-audience`.
    var anyAudience = false
    /// Whether any hosted flag but `--hosted` was given (they need it).
    var anyGiven: Bool { node != nil || anyAudience || settingsGiven }
    private var settingsGiven = false

    mutating func set(_ change: (inout HostedConfiguration) -> Void) {
      change(&settings)
      settingsGiven = true
    }
  }

  /// What the daemon runs with.
  public internal(set) var configuration = ServerConfiguration()
  var clock = ClockName.system
  var clockStart: Double?
  var sync = SyncOptions()
  var hosted = HostedOptions()
  /// Whether `--datastore` was given (hosted mode has none).
  var datastoreGiven = false
  /// The default socket, for a token file beside it under `--stdio`.
  let defaultSocket: String

  public init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    defaultSocket = DaemonOptions.defaultSocketPath(environment: environment)
    configuration.listen = .socket(path: defaultSocket)
    configuration.datastorePath = Datastore.defaultPath(environment: environment)
    let defaultDatastore = configuration.datastorePath
    try Arguments.parse(arguments, into: &self, options: Self.options)
    datastoreGiven = configuration.datastorePath != defaultDatastore
    try settle()
  }

  /// The checks that span options, and the defaults that depend on others.
  private mutating func settle() throws(UsageError) {
    let web = configuration.web
    if (web.tlsCertificate == nil) != (web.tlsKey == nil) {
      throw .invalid("--tls-cert and --tls-key go together (a PEM certificate and its private key)")
    }
    if web.tlsCertificate == nil, let remote = web.addresses.first(where: { !$0.isLoopback }) {
      throw .invalid(
        "--listen \(remote): a non-loopback address needs TLS (--tls-cert and --tls-key); without it the token and "
          + "every message would cross the network in clear text. Use 127.0.0.1 (with `adb reverse` for an Android "
          + "device) or give a certificate")
    }
    if !web.isEnabled && (web.tokenFile != nil || !web.allowedOrigins.isEmpty || web.tlsCertificate != nil) {
      throw .invalid("--token-file, --allow-origin and --tls-* need --listen HOST:PORT")
    }
    if let server = sync.server, SyncConfiguration.isNode(server) {
      try settleNodeSync(server)
    } else if let server = sync.server {
      guard let account = sync.account else { throw .invalid("--sync needs --account ID (whose state this is)") }
      guard sync.tokenSource == nil else {
        throw .invalid(
          "--sync-token-command and --sync-token-file go with a hosted node's URL (--sync wss://HOST/); PostgreSQL's "
            + "credentials are in its URL")
      }
      do {
        _ = try SyncServer(server)
      } catch {
        throw .invalid(error.message)
      }
      var options = SyncConfiguration(server: server, account: account, device: sync.device)
      if let limit = sync.outboxLimit { options.outboxLimit = limit }
      configuration.sync = options
    } else if sync.account != nil || sync.device != nil || sync.outboxLimit != nil || sync.tokenSource != nil {
      throw .invalid("--account, --device, --sync-outbox-limit and --sync-token-* need --sync URL")
    }
    try settleHosted()
    switch clock {
    case .system:
      if clockStart != nil { throw .invalid("--clock-start needs --clock virtual") }
    case .virtual: configuration.clock = .virtual(start: clockStart ?? System.wallClockSeconds())
    }
    // Translators' files live beside the catalog by default (`catalog/messages/` for `catalog/app.json`).
    if configuration.messagesDirectory == nil, let catalog = configuration.catalogPath {
      configuration.messagesDirectory = CatalogLoader.messagesDirectory(besideCatalog: catalog)
    }
  }

  /// `--sync ws://…` or `wss://…`: a device syncing through a hosted node with the user's token. `ws://` only to
  /// this machine (the token would cross the network in clear text); the account is the token's `sub` (`--account`,
  /// if given, must be the same: checked at start and at every sign-in).
  private mutating func settleNodeSync(_ server: String) throws(UsageError) {
    let url: WebSocketURL
    switch WebSocketURL.parse(server) {
    case .success(let parsed): url = parsed
    case .failure(let error): throw .invalid("--sync: \(error.message)")
    }
    if !url.secure && !url.isLoopback {
      throw .invalid(
        "--sync \(server): ws:// crosses the network in clear text, token and all; use wss:// (ws:// is for 127.0.0.1)")
    }
    guard let source = sync.tokenSource else {
      throw .invalid(
        "--sync \(server) needs the user's token: --sync-token-command CMD (its output) or --sync-token-file F")
    }
    var options = SyncConfiguration(server: server, account: sync.account ?? "", device: sync.device)
    options.tokenSource = source
    if let limit = sync.outboxLimit { options.outboxLimit = limit }
    configuration.sync = options
  }

  /// `--hosted`: its checks, and the node's default name.
  private mutating func settleHosted() throws(UsageError) {
    guard let server = hosted.server else {
      if hosted.anyGiven {
        throw .invalid(
          "--node, --jwt-*, --jwks, --max-resident-accounts, --account-rate, --account-max-donations and --compaction-threshold need --hosted URL"
        )
      }
      return
    }
    do {
      if server != HostedConfiguration.memory { _ = try SyncServer(server) }
    } catch {
      let message = error.message.hasPrefix("--sync: ") ? String(error.message.dropFirst(8)) : error.message
      throw .invalid("--hosted: \(message)")
    }
    guard configuration.catalogPath != nil else {
      throw .invalid("--hosted needs --catalog FILE: one catalog defines the tips of every account")
    }
    if configuration.sync != nil {
      throw .invalid("--hosted and --sync do not go together (a hosted account syncs by itself)")
    }
    if datastoreGiven { throw .invalid("--hosted keeps every account in PostgreSQL: drop --datastore") }
    if configuration.installID != nil {
      throw .invalid("--hosted assigns variants from each account id: drop --install-id")
    }
    if clock == .virtual { throw .invalid("--hosted runs on the system clock: drop --clock virtual") }
    if hosted.settings.jwtSecretFile == nil && hosted.settings.jwksFile == nil {
      throw .invalid(
        "--hosted needs --jwt-secret-file FILE or --jwks FILE (how users' tokens are checked); the admin token alone "
          + "signs in no user")
    }
    if hosted.settings.jwksFile != nil, hosted.settings.audiences.isEmpty, hosted.settings.issuer == nil,
      !hosted.anyAudience
    {
      throw .invalid(
        "--jwks needs --jwt-audience AUD or --jwt-issuer ISS: an identity provider's key set signs tokens for every "
          + "project it serves (Firebase's is shared by all Firebase projects, and a project's owner chooses sub with "
          + "custom tokens), so without them another project's tokens sign in as any of your users. Firebase: "
          + "--jwt-audience PROJECT_ID --jwt-issuer https://securetoken.google.com/PROJECT_ID "
          + "(--jwt-any-audience accepts any, for tests and private key sets)")
    }
    var options = hosted.settings
    options.server = server
    options.node = hosted.node ?? Self.defaultNodeName(configuration)
    // The admin token only when asked for: --token-file given (no token file is made for a hosted node).
    options.adminTokenFile = configuration.web.tokenFile
    configuration.hosted = options
    configuration.datastorePath = ":memory:"
    // A node serves every user of an app: far more connections than one user's daemon (--max-connections still
    // sets it; the daemon raises its open-file limit to match as far as the system allows).
    if configuration.maxConnections == ServerConfiguration().maxConnections { configuration.maxConnections = 10_000 }
    // Behind a balancer every session arrives from the balancer's address: per-peer limits would cap the whole node
    // (and a flood of bad tokens through it would lock out every user), so they are off unless given — limit
    // clients at the balancer, or give the flags when the node faces clients directly.
    let defaults = ServerConfiguration().connectionLimits
    if configuration.connectionLimits.perPeer == defaults.perPeer { configuration.connectionLimits.perPeer = 0 }
    if configuration.connectionLimits.ratePerPeer == defaults.ratePerPeer {
      configuration.connectionLimits.ratePerPeer = 0
    }
  }

  /// The host name and the first listen port (`db-3:8787`), or the host name and the process id.
  static func defaultNodeName(_ configuration: ServerConfiguration) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    let host = gethostname(&buffer, buffer.count) == 0 ? String(cString: buffer) : "tipsd"
    if let port = configuration.web.addresses.first?.port, port != 0 { return "\(host):\(port)" }
    return "\(host):\(getpid())"
  }

  public func run() -> Int32 {
    var configuration = configuration
    let logger = Logger(level: configuration.logLevel)
    do {
      if case .socket(let path) = configuration.listen { try Self.prepareSocketDirectory(for: path) }
      if configuration.web.isEnabled, configuration.web.tokenFile == nil, configuration.hosted == nil {
        // Beside the socket (the default socket's directory under --stdio).
        let socket: String
        if case .socket(let path) = configuration.listen { socket = path } else { socket = defaultSocket }
        try Self.prepareSocketDirectory(for: socket)
        configuration.web.tokenFile = TokenFile.defaultPath(socketPath: socket)
      }
    } catch {
      logger.error("\(error)")
      return 1
    }
    logger.info(
      "starting tipsd \(TipsdVersion.server)",
      [
        (
          "datastore",
          configuration.datastorePath == ":memory:" ? ":memory:" : Self.absolutePath(configuration.datastorePath)
        ),
        ("catalog", configuration.catalogPath.map(Self.absolutePath) ?? "none"),
        ("messages", configuration.messagesDirectory.map(Self.absolutePath) ?? "none"),
        ("clock", configuration.clock == .system ? "system" : "virtual"),
      ])
    do {
      let exit = try DaemonRunner.run(configuration: configuration, logger: logger)
      logger.info("stopped")
      return exit == .clean ? 0 : 1
    } catch {
      logger.error("\(error)")
      return 1
    }
  }

  /// Creates the socket's directory (mode 0700) when missing; refuses one that another user owns.
  static func prepareSocketDirectory(for path: String) throws(ServerError) {
    guard let slash = path.lastIndex(of: "/") else { return }
    let directory = String(path[..<slash])
    guard !directory.isEmpty else { return }
    var info = stat()
    if stat(directory, &info) != 0 {
      guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
        throw ServerError("cannot create the socket directory \(directory): \(System.message(errno))")
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
