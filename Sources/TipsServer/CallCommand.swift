#if canImport(Glibc)
  import Glibc
#endif
import TipsFraming
import TipsJSON
import TipsTransport

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
      let client = try LineClient(path: socketPath, timeout: timeout)
      defer { client.close() }
      let hello = try client.request(
        id: 1, method: "initialize",
        params: .object([
          "protocolVersion": .string(TipsdVersion.protocolVersion),
          "clientInfo": .object(["name": "tipsd call", "version": .string(TipsdVersion.server)]),
        ]))
      if let error = hello["error"] {
        writeStderr("tipsd call: initialize failed: \(error.jsonString)\n")
        return 1
      }
      let reply = try client.request(id: 2, method: method, params: params)
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

/// A blocking newline-framed JSON-RPC client over a Unix socket, for `tipsd call`.
final class LineClient {
  let fd: Int32
  let path: String
  var buffer: [UInt8] = []

  init(path: String, timeout: Double) throws(ServerError) {
    self.path = path
    fd = UnixSocketClient.connect(path)
    guard fd >= 0 else {
      let reason = String(cString: strerror(-fd))
      throw ServerError("cannot connect to \(path): \(reason) — is `tipsd serve --socket \(path)` running?")
    }
    var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
  }

  func close() { Glibc.close(fd) }

  func request(id: Int64, method: String, params: JSONValue?) throws(ServerError) -> JSONValue {
    var message: JSONObject = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method)]
    if let params { message["params"] = params }
    try send(Framer.encode(JSONValue.object(message).serialized(), as: .newline))
    while true {
      let line = try readLine()
      guard let reply = try? JSONParser.parse(line) else { continue }
      if reply["id"]?.intValue == id { return reply }
      // Notifications or other replies are skipped.
    }
  }

  func send(_ bytes: [UInt8]) throws(ServerError) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
      if n < 0 {
        if errno == EINTR { continue }
        throw ServerError("write to \(path) failed: \(String(cString: strerror(errno)))")
      }
      offset += n
    }
  }

  func readLine() throws(ServerError) -> [UInt8] {
    while true {
      if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
        let line = Array(buffer[..<newline])
        buffer.removeSubrange(...newline)
        return line
      }
      var chunk = [UInt8](repeating: 0, count: 65_536)
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK { throw ServerError("timed out waiting for \(path)") }
        throw ServerError("read from \(path) failed: \(String(cString: strerror(errno)))")
      }
      if n == 0 { throw ServerError("the daemon closed the connection") }
      buffer.append(contentsOf: chunk[0..<n])
    }
  }
}
