import TipsClient
import TipsProtocol
import TipsServer
import TipsSystem

#if canImport(Glibc)
  import Glibc
#endif

/// How a command finds a running daemon and talks to it — the options every client command shares (`--socket`,
/// `--timeout`) and the one way they connect and initialize.
struct DaemonOptions {
  /// `--socket PATH`: the daemon's Unix socket.
  var socketPath: String
  /// `--timeout SECONDS`: how long a reply may take.
  var timeout = 10.0
  /// `--token-file FILE`: hosted mode, the token the session signs in with (the admin token, or a user's JWT).
  var tokenFile: String?

  init(environment: [String: String]) {
    socketPath = Self.defaultSocketPath(environment: environment)
  }

  /// `$XDG_RUNTIME_DIR/tipsd/tipsd.sock`, else `/tmp/tipsd-UID/tipsd.sock` — where `tipsd serve` listens by default.
  static func defaultSocketPath(environment: [String: String]) -> String {
    if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
      return "\(runtime)/tipsd/tipsd.sock"
    }
    return "/tmp/tipsd-\(getuid())/tipsd.sock"
  }

  /// `--socket PATH`.
  static let socket = Option<DaemonOptions>.value(
    "--socket", as: "PATH",
    help: "the daemon's socket (default: $XDG_RUNTIME_DIR/tipsd/tipsd.sock,\nelse /tmp/tipsd-UID/tipsd.sock)"
  ) { $0.socketPath = $1.text }

  /// `--timeout SECONDS`.
  static let timeoutOption = Option<DaemonOptions>.value(
    "--timeout", as: "SECONDS", help: "how long to wait for each reply (default 10)"
  ) { options, value throws(UsageError) in options.timeout = try value.positiveNumber(of: "seconds") }

  /// `--token-file FILE`.
  static let tokenFileOption = Option<DaemonOptions>.value(
    "--token-file", as: "FILE",
    help: "hosted mode: sign in with the token in FILE (the node's admin token,\nor a user's JWT)"
  ) { $0.tokenFile = $1.text }

  /// `--socket`, `--timeout` and `--token-file` on a command that holds its options at `path`.
  static func options<Command>(_ path: WritableKeyPath<Command, DaemonOptions>) -> [Option<Command>] {
    [socket.lifted(path), timeoutOption.lifted(path), tokenFileOption.lifted(path)]
  }

  /// Connects to the daemon and initializes as `name` (`tipsd metrics`).
  func connect(as name: String) throws(ClientError) -> JSONRPCClient {
    var token: String?
    if let tokenFile {
      do {
        let text = String(decoding: try System.readFile(tokenFile), as: UTF8.self)
        token = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
      } catch {
        throw ClientError("--token-file \(tokenFile): \(error)")
      }
    }
    let client = try JSONRPCClient(socketPath: socketPath, framing: .newline, timeout: timeout)
    do {
      try client.send(
        InitializeRequest(
          clientName: name, clientVersion: TipsdVersion.server, authToken: token?.isEmpty == false ? token : nil))
    } catch {
      client.close()
      throw error
    }
    return client
  }
}
