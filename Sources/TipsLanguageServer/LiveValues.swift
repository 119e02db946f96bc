import TipsClient
public import TipsJSON
import TipsProtocol
import TipsSystem

/// What a running daemon says about a tip (`tips/explain`), for hover.
public enum LiveValue: Sendable {
  /// No daemon answered (none running, or too slow): hover shows only the words.
  case unavailable
  /// The daemon does not know the tip (it serves another catalog, or the tip is new).
  case unknownTip
  /// `tips/explain`'s result, and where it came from (the socket path).
  case explained(JSONValue, source: String)
}

/// Where hover's live values come from; the tests substitute their own.
public protocol LiveValueSource {
  func explain(tipID: String) -> LiveValue
}

/// A daemon on a Unix socket (the default socket, or `tipsd lsp --socket PATH`): one short connection per hover,
/// `initialize` then `tips/explain`, each read bounded by `timeout` so a stuck daemon never holds the editor long.
public struct DaemonLiveValues: LiveValueSource {
  public var socketPath: String
  public var timeout: Double

  public init(socketPath: String, timeout: Double = 0.5) {
    self.socketPath = socketPath
    self.timeout = timeout
  }

  public func explain(tipID: String) -> LiveValue {
    guard System.fileExists(socketPath) else { return .unavailable }
    do {
      let client = try JSONRPCClient(socketPath: socketPath, framing: .newline, timeout: timeout)
      defer { client.close() }
      try client.initialize(name: "tipsd-lsp")
      return .explained(try client.send(ExplainRequest(id: tipID)).json, source: socketPath)
    } catch {
      // -32001: the daemon has no such tip; any other refusal leaves hover with the words alone.
      return error.response?.code == .unknownTip ? .unknownTip : .unavailable
    }
  }
}
