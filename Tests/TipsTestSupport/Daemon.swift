public import Foundation
@_exported public import TipsClient
@_exported public import TipsEmbedded
public import TipsFraming
public import TipsJSON
import TipsTransport

/// Seconds a test waits for the daemon before failing; `TIPSD_TEST_TIMEOUT` overrides it.
///
/// Only a guard against hanging (issue #17): a passing test never waits this long, because every wait is for a
/// condition (a reply, a notification, a log line, a process exit), never for time to pass. Scale it (`* 3`) for
/// waits that span many round trips; never shorten it to prove that something did *not* happen — use
/// ``RPCClient/barrier()`` for that.
public let testTimeout: Double = ProcessInfo.processInfo.environment["TIPSD_TEST_TIMEOUT"].flatMap(Double.init) ?? 10

/// Polls `condition` every 5 ms until it holds or `timeout` (a hang guard) passes; returns whether it held.
@discardableResult
public func waitUntil(timeout: Double = testTimeout, _ condition: () -> Bool) -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while !condition() {
    if Date() > deadline { return false }
    usleep(5_000)
  }
  return true
}

/// The built `tipsd` binary, beside the test bundle.
public func tipsdBinary() -> String {
  if let explicit = ProcessInfo.processInfo.environment["TIPSD_BIN"] { return explicit }
  let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  return exe.deletingLastPathComponent().appendingPathComponent("tipsd").path
}

/// A fresh private directory for sockets and datastores, removed by the caller.
public func temporaryDirectory() -> String {
  var template = Array("/tmp/tipsd-test-XXXXXX".utf8CString)
  let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
  return path
}

public struct TestFailure: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// The daemon's stderr, appended from FileHandle's reader thread.
/// `@unchecked Sendable`: every access holds `lock`.
public final class LogBuffer: @unchecked Sendable {
  private var data = Data()
  private let lock = NSLock()

  public func append(_ more: Data) {
    lock.lock()
    data.append(more)
    lock.unlock()
  }

  public var text: String {
    lock.lock()
    defer { lock.unlock() }
    return String(decoding: data, as: UTF8.self)
  }
}

/// A real `tipsd serve` process.
public final class Daemon: @unchecked Sendable {
  public let process = Process()
  public let stdin = Pipe()
  public let stdout = Pipe()
  public let stderr = Pipe()
  public let directory: String
  public let socketPath: String?
  private let stderrBuffer = LogBuffer()

  /// Starts `tipsd serve` with the given arguments. In socket mode (no `--stdio`), waits for the socket.
  public init(
    _ arguments: [String], socket: Bool = true, directory: String? = nil, datastore: String = ":memory:",
    environment: [String: String] = [:], socketPath customSocket: String? = nil, currentDirectory: String? = nil
  ) throws {
    self.directory = directory ?? temporaryDirectory()
    let socketPath = socket ? (customSocket ?? "\(self.directory)/tipsd.sock") : nil
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    self.socketPath = socketPath
    process.executableURL = URL(fileURLWithPath: tipsdBinary())
    var args = ["serve"]
    if let socketPath { args += ["--socket", socketPath] } else { args += ["--stdio"] }
    // Tests drive testing overrides, resets and the virtual clock; a test of the refusal passes --deny-testing.
    let denyTesting = arguments.contains("--deny-testing")
    args +=
      ["--datastore", datastore] + (denyTesting ? [] : ["--allow-testing"])
      + arguments.filter { $0 != "--deny-testing" }
    process.arguments = args
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    let buffer = stderrBuffer
    stderr.fileHandleForReading.readabilityHandler = { handle in buffer.append(handle.availableData) }
    try process.run()
    if let socketPath {
      // Ready when this daemon accepts a connection (a stale socket file from a killed one may still be there).
      let deadline = Date().addingTimeInterval(testTimeout)
      // (With a --log-level above info there is no "serving" line; a killed predecessor's stale socket refuses.)
      let quiet = arguments.contains("--log-level")
      while (try? RPCClient(socketPath: socketPath, framing: .newline)) == nil
        || (!quiet && !log.contains("msg=serving"))
      {
        guard process.isRunning else { throw TestFailure("tipsd exited early: \(log)") }
        guard Date() < deadline else { throw TestFailure("tipsd did not start serving \(socketPath): \(log)") }
        usleep(5_000)
      }
    }
  }

  /// Everything the daemon wrote to stderr so far.
  ///
  /// Read by another thread as it arrives: a line the daemon wrote before a reply may not be here yet when the
  /// reply is. Use ``waitForLog(_:timeout:)`` to check for a line.
  public var log: String { stderrBuffer.text }

  /// Waits until the log contains `text` (true), or the hang guard passes (false).
  public func waitForLog(_ text: String, timeout: Double = testTimeout) -> Bool {
    waitUntil(timeout: timeout) { log.contains(text) }
  }

  /// A client over the daemon's stdin/stdout (stdio mode).
  /// (`file`, `function`, `line`: the caller, for the traffic log; see ``TrafficTap``.)
  public func stdioClient(
    framing: Framing = .newline, file: String = #filePath, function: String = #function, line: Int = #line
  ) -> RPCClient {
    let command = [process.executableURL?.path ?? "tipsd"] + (process.arguments ?? [])
    let client = RPCClient(
      readFD: stdout.fileHandleForReading.fileDescriptor, writeFD: stdin.fileHandleForWriting.fileDescriptor,
      framing: framing, ownsDescriptors: false, timeout: testTimeout)
    client.tap = TrafficTap.fromEnvironment(
      peer: TrafficTap.stdioPeer(command: command, framing: framing), file: file, function: function, line: line)
    return client
  }

  /// A new client connection to the daemon's socket.
  public func connect(
    framing: Framing = .newline, file: String = #filePath, function: String = #function, line: Int = #line
  ) throws -> RPCClient {
    guard let socketPath else { throw TestFailure("daemon is in stdio mode") }
    let client = try RPCClient(socketPath: socketPath, framing: framing, timeout: testTimeout)
    client.tap = TrafficTap.fromEnvironment(
      peer: TrafficTap.socketPeer(socketPath, framing: framing), file: file, function: function, line: line)
    return client
  }

  public func signal(_ signum: Int32) { kill(process.processIdentifier, signum) }

  /// Waits for the process to exit and returns its status.
  @discardableResult
  public func wait(timeout: Double = testTimeout) throws -> Int32 {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning {
      guard Date() < deadline else { throw TestFailure("tipsd did not exit: \(log)") }
      usleep(5_000)
    }
    return process.terminationStatus
  }

  /// Stops the daemon (SIGTERM, then SIGKILL) and removes its directory.
  public func stop(removeDirectory: Bool = true) {
    if process.isRunning {
      signal(SIGTERM)
      _ = try? wait(timeout: 5)
      if process.isRunning { signal(SIGKILL) }
      process.waitUntilExit()
    }
    stderr.fileHandleForReading.readabilityHandler = nil
    if removeDirectory { try? FileManager.default.removeItem(atPath: directory) }
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }
}

/// The tests' client is the product's blocking client (`TipsClient.JSONRPCClient`), shared with `tipsd call` and
/// the benchmarks; ``Daemon/connect(framing:file:function:line:)`` gives it the test timeout and the traffic tap.
public typealias RPCClient = JSONRPCClient

/// The seed 000 FilterTip.
public let filterTip: JSONValue = [
  "id": "filter.tip",
  "title": "You can narrow this down",
  "message": "When you have too many results, the filter at the top can cut them quickly.",
  "image": "line.3.horizontal.decrease.circle",
  "actions": [["id": "learn-more", "title": "Learn more"]],
  "rules": [
    ["event": "search.opened", "count": ["gte": 3]],
    ["event": "filter.used", "count": ["eq": 0]],
    ["event": "search.opened", "within": ["days": 1], "count": ["gte": 1]],
  ],
]
