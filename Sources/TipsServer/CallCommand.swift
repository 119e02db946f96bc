#if canImport(Glibc)
  import Glibc
#endif
import TipsClient
import TipsJSON

/// `tipsd call [--socket PATH] METHOD [PARAMS-JSON]`: initialize, send one request, print its result as pretty
/// JSON. Exit status 0 on a result, 1 on a JSON-RPC error or a connection failure, 2 on bad usage.
enum CallCommand {
  static func run(_ args: [String], environment: [String: String]) -> Int32 {
    var socketPath = TipsdCommand.defaultSocketPath(environment: environment)
    var timeout = 10.0
    var positional: [String] = []
    var index = 0
    while index < args.count {
      switch args[index] {
      case "--socket" where index + 1 < args.count:
        index += 1
        socketPath = args[index]
      case "--timeout" where index + 1 < args.count:
        index += 1
        timeout = Double(args[index]) ?? timeout
      case "--help", "-h":
        print("usage: tipsd call [--socket PATH] [--timeout SECONDS] METHOD [PARAMS-JSON]")
        return 0
      default:
        positional.append(args[index])
      }
      index += 1
    }
    guard let method = positional.first, positional.count <= 2 else {
      writeStderr("usage: tipsd call [--socket PATH] [--timeout SECONDS] METHOD [PARAMS-JSON]\n")
      return 2
    }
    var params: JSONValue?
    if positional.count == 2 {
      do {
        params = try JSONParser.parse(positional[1])
      } catch {
        writeStderr("tipsd call: PARAMS-JSON is not valid JSON: \(error)\n")
        return 2
      }
    }
    do {
      let client = try JSONRPCClient(socketPath: socketPath, framing: .newline, timeout: timeout)
      defer { client.close() }
      let hello = try client.call(
        "initialize",
        .object([
          "protocolVersion": .string(TipsdVersion.protocolVersion),
          "clientInfo": .object(["name": "tipsd call", "version": .string(TipsdVersion.server)]),
        ]))
      if let error = hello["error"] {
        writeStderr("tipsd call: initialize failed: \(error.jsonString)\n")
        return 1
      }
      let reply = try client.call(method, params)
      if let error = reply["error"] {
        let code = error["code"]?.intValue.map(String.init) ?? "?"
        let message = error["message"]?.stringValue ?? error.jsonString
        writeStderr("tipsd call: \(method) failed (\(code)): \(message)\n")
        if let data = error["data"] { writeStderr("\(data.prettyString())\n") }
        return 1
      }
      print((reply["result"] ?? .null).prettyString())
      return 0
    } catch {
      writeStderr("tipsd call: \(error)\n")
      return 1
    }
  }
}
