import Foundation
public import TipsClient
public import TipsFraming
public import TipsJSON
public import TipsProtocol

/// Traffic tap (issue #5), the same as the Python and TypeScript clients': when the environment variable
/// `TIPSD_TRAFFIC_LOG` names a file when an ``RPCClient`` is created, every message that client sends or
/// receives is appended to that file as one JSON line
/// `{"conn", "peer", "dir": "out"|"in", "t", "suite", "test", "msg"}`
/// (a frame that is not JSON is logged as `"raw"` text instead of `"msg"`).
///
/// `conn` is unique per process and connection; `peer` is `{"kind": "socket", "path", "framing"}`,
/// `{"kind": "stdio", "command", "framing"}` or `{"kind": "embedded", "framing"}` (an in-process server's
/// `EmbeddedClient`); `suite` is the test target that created the client (the directory under `Tests/` of the source
/// file that called `Daemon.connect()`, `Daemon.stdioClient()`, an `RPCClient` initializer or `TestServer.connect`)
/// and `test` that file, line and function. `clients/python/tests/traffic_check.py` validates such a log against
/// protocol/openrpc.json; `--suite TipsServerTests` limits it to the clients that suite created (the hardening suite
/// sends malformed input on purpose). `TIPSD_TRAFFIC_SUITES=A,B` records only
/// the clients of those suites in the first place (the hardening suite's traffic is large and never checked).
///
/// Lines are written with one `O_APPEND` write under a process-wide lock, so clients on any thread (swift-testing
/// runs tests in parallel) and processes may share one file. Logging never fails a test.
public final class TrafficTap: MessageTap, Sendable {
  public static let environmentVariable = "TIPSD_TRAFFIC_LOG"
  /// Comma-separated suites whose clients are recorded (default: all).
  public static let suitesVariable = "TIPSD_TRAFFIC_SUITES"

  private static let lock = NSLock()
  nonisolated(unsafe) private static var counter = 0

  public let path: String
  public let conn: String
  public let peer: JSONValue
  public let suite: String
  public let test: String

  /// A tap for a new connection when `TIPSD_TRAFFIC_LOG` is set, else nil.
  public static func fromEnvironment(peer: JSONValue, file: String, function: String, line: Int) -> TrafficTap? {
    let environment = ProcessInfo.processInfo.environment
    guard let path = environment[environmentVariable], !path.isEmpty else { return nil }
    if let only = environment[suitesVariable], !only.isEmpty,
      !only.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == suite(of: file) })
    {
      return nil
    }
    return TrafficTap(path: path, peer: peer, file: file, function: function, line: line)
  }

  /// The test target of a source file: the directory under `Tests/` (else the file's directory).
  public static func suite(of file: String) -> String {
    let components = file.split(separator: "/").map(String.init)
    if let i = components.lastIndex(of: "Tests"), i + 2 < components.count { return components[i + 1] }
    return components.dropLast().last ?? "?"
  }

  public init(path: String, peer: JSONValue, file: String, function: String, line: Int) {
    self.path = path
    self.peer = peer
    Self.lock.lock()
    Self.counter += 1
    let n = Self.counter
    Self.lock.unlock()
    conn = "\(getpid())-\(n)"
    suite = Self.suite(of: file)
    test = "\(suite)/\(file.split(separator: "/").last.map(String.init) ?? file):\(line) \(function)"
  }

  /// The `peer` of a Unix-socket connection.
  public static func socketPeer(_ path: String, framing: Framing) -> JSONValue {
    ["kind": "socket", "path": .string(path), "framing": .string(name(of: framing))]
  }

  /// The `peer` of an in-process connection to a server on the embedded loop.
  public static func embeddedPeer(framing: Framing) -> JSONValue {
    ["kind": "embedded", "framing": .string(name(of: framing))]
  }

  /// The `peer` of a connection to a child's stdin/stdout.
  public static func stdioPeer(command: [String], framing: Framing) -> JSONValue {
    ["kind": "stdio", "command": .array(command.map { .string($0) }), "framing": .string(name(of: framing))]
  }

  static func name(of framing: Framing) -> String {
    switch framing {
    case .newline: return "newline"
    case .contentLength: return "content-length"
    }
  }

  /// Logs a message (`direction`: "out" = sent by the client, "in" = received).
  public func record(_ direction: String, message: JSONValue) {
    append(direction, "msg", message)
  }

  /// Logs a payload: as `msg` when it is JSON, else as `raw` text.
  public func record(_ direction: String, payload: [UInt8]) {
    if let message = try? JSONParser.parse(payload) {
      append(direction, "msg", message)
    } else {
      append(direction, "raw", .string(String(decoding: payload, as: UTF8.self)))
    }
  }

  private func append(_ direction: String, _ key: String, _ value: JSONValue) {
    let entry: JSONValue = [
      "conn": .string(conn), "peer": peer, "dir": .string(direction), "t": .double(Date().timeIntervalSince1970),
      "suite": .string(suite), "test": .string(test), key: value,
    ]
    let line = entry.serialized() + [UInt8(ascii: "\n")]
    Self.lock.lock()
    defer { Self.lock.unlock() }
    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return }
    defer { close(fd) }
    _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  }
}
