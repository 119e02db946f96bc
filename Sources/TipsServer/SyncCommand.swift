#if canImport(Glibc)
  import Glibc
#endif
import TipsClient
import TipsEngine
import TipsJSON

/// `tipsd sync status [--socket PATH] [--json]`: asks the running daemon for `sync/status` and prints it as
/// `name: value` lines (or the JSON result). Exit status 0 when sync is enabled, 1 when it is not or the daemon cannot
/// be reached, 2 on bad usage.
enum SyncCommand {
  static let usage = "usage: tipsd sync status [--socket PATH] [--json]"

  static func run(_ args: [String], environment: [String: String]) -> Int32 {
    var socketPath = TipsdCommand.defaultSocketPath(environment: environment)
    var json = false
    var positional: [String] = []
    var index = 0
    while index < args.count {
      switch args[index] {
      case "--socket" where index + 1 < args.count:
        index += 1
        socketPath = args[index]
      case "--json": json = true
      case "--help", "-h":
        print(usage)
        return 0
      default: positional.append(args[index])
      }
      index += 1
    }
    guard positional == ["status"] else {
      writeStderr(usage + "\n")
      return 2
    }
    let status: JSONValue
    do {
      let client = try JSONRPCClient(socketPath: socketPath, framing: .newline, timeout: 10)
      defer { client.close() }
      _ = try client.call(
        "initialize",
        .object([
          "protocolVersion": .string(TipsdVersion.protocolVersion),
          "clientInfo": .object(["name": "tipsd sync", "version": .string(TipsdVersion.server)]),
        ]))
      let reply = try client.call("sync/status", nil)
      if let error = reply["error"] {
        writeStderr("tipsd sync status: \(error["message"]?.stringValue ?? error.jsonString)\n")
        return 1
      }
      status = reply["result"] ?? .null
    } catch {
      writeStderr("tipsd sync status: \(error)\n")
      return 1
    }
    if json {
      print(status.prettyString())
    } else {
      print(lines(status, now: SystemTime.now()).joined(separator: "\n"))
    }
    return status["enabled"]?.boolValue == true ? 0 : 1
  }

  /// The status as `name: value` lines.
  static func lines(_ status: JSONValue, now: Double) -> [String] {
    guard status["enabled"]?.boolValue == true else {
      return ["state: disabled (start tipsd serve with --sync URL --account ID)"]
    }
    func text(_ key: String) -> String { status[key]?.stringValue ?? "none" }
    func instant(_ key: String) -> String {
      guard let at = status[key]?.doubleValue else { return "never" }
      let ago = max(0, now - at)
      return "\(ISO8601.string(from: at)) (\(String(format1(ago))) s ago)"
    }
    let limit = status["outboxLimit"]?.intValue.map { " (limit \($0))" } ?? ""
    return [
      "state: \(text("state"))",
      "server: \(text("server"))",
      "account: \(text("account"))",
      "device: \(text("device"))",
      "outbox: \(status["outbox"]?.intValue ?? 0)\(limit)",
      "lag: \(format1(status["lagSeconds"]?.doubleValue ?? 0)) s",
      "cursor: \(status["cursor"]?.intValue ?? 0)",
      "last push: \(instant("lastPushAt"))",
      "last pull: \(instant("lastPullAt"))",
      "last error: \(text("lastError"))",
    ]
  }

  /// One decimal.
  static func format1(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(abs(tenths % 10))"
  }
}
