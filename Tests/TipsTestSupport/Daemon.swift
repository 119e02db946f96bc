public import Foundation
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
    args += ["--datastore", datastore] + arguments
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
      while (try? RPCClient(socketPath: socketPath, framing: .newline)) == nil || (!quiet && !log.contains("msg=serving")) {
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
    return RPCClient(
      readFD: stdout.fileHandleForReading.fileDescriptor, writeFD: stdin.fileHandleForWriting.fileDescriptor,
      framing: framing, ownsDescriptors: false, peer: TrafficTap.stdioPeer(command: command, framing: framing),
      file: file, function: function, line: line)
  }

  /// A new client connection to the daemon's socket.
  public func connect(
    framing: Framing = .newline, file: String = #filePath, function: String = #function, line: Int = #line
  ) throws -> RPCClient {
    guard let socketPath else { throw TestFailure("daemon is in stdio mode") }
    return try RPCClient(socketPath: socketPath, framing: framing, file: file, function: function, line: line)
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

/// A blocking JSON-RPC client for tests: sends requests, collects replies and notifications in arrival order.
public final class RPCClient: @unchecked Sendable {
  public let readFD: Int32
  public let writeFD: Int32
  public let framing: Framing
  public let ownsDescriptors: Bool
  public var framer = Framer(maxMessageSize: 64 << 20)
  public var nextID: Int64 = 1
  /// Notifications received and not yet taken.
  public var notifications: [JSONValue] = []
  /// Replies received for requests sent with ``send(_:)``.
  public var replies: [JSONValue] = []
  public var closed = false
  /// Records this client's messages when `TIPSD_TRAFFIC_LOG` is set (issue #5; see ``TrafficTap``).
  public let trafficTap: TrafficTap?

  /// `peer` describes the other end for the traffic log; `file`, `function` and `line` default to the caller.
  public init(
    readFD: Int32, writeFD: Int32, framing: Framing, ownsDescriptors: Bool, peer: JSONValue? = nil,
    file: String = #filePath, function: String = #function, line: Int = #line
  ) {
    self.readFD = readFD
    self.writeFD = writeFD
    self.framing = framing
    self.ownsDescriptors = ownsDescriptors
    trafficTap = TrafficTap.fromEnvironment(
      peer: peer ?? ["kind": "fd", "framing": .string(TrafficTap.name(of: framing))],
      file: file, function: function, line: line)
  }

  public convenience init(
    socketPath: String, framing: Framing, file: String = #filePath, function: String = #function, line: Int = #line
  ) throws {
    let fd = UnixSocketClient.connect(socketPath)
    guard fd >= 0 else {
      throw TestFailure("connect to \(socketPath) failed: \(String(cString: strerror(-fd)))")
    }
    self.init(
      readFD: fd, writeFD: fd, framing: framing, ownsDescriptors: true,
      peer: TrafficTap.socketPeer(socketPath, framing: framing), file: file, function: function, line: line)
  }

  deinit { close() }

  public func close() {
    guard !closed else { return }
    closed = true
    if ownsDescriptors { Foundation.close(readFD) }
  }

  /// Closes abruptly: RST instead of FIN where possible (SO_LINGER 0).
  public func reset() {
    var linger = linger(l_onoff: 1, l_linger: 0)
    setsockopt(readFD, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
    close()
  }

  /// Writes raw bytes.
  public func write(_ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { Foundation.send(writeFD, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
      if n < 0 && errno == ENOTSOCK {
        let m = bytes.withUnsafeBytes { Foundation.write(writeFD, $0.baseAddress! + offset, $0.count - offset) }
        guard m > 0 else { throw TestFailure("write failed: \(String(cString: strerror(errno)))") }
        offset += m
        continue
      }
      guard n > 0 else { throw TestFailure("send failed: \(String(cString: strerror(errno)))") }
      offset += n
    }
  }

  /// Sends one message (framed).
  public func send(_ message: JSONValue) throws {
    trafficTap?.record("out", message: message)
    try write(Framer.encode(message.serialized(), as: framing))
  }

  /// Sends a raw payload (framed), e.g. invalid JSON.
  public func sendRaw(_ text: String) throws {
    trafficTap?.record("out", payload: Array(text.utf8))
    try write(Framer.encode(Array(text.utf8), as: framing))
  }

  /// Reads one message or returns nil at EOF or timeout.
  public func readMessage(timeout: Double = testTimeout) throws -> JSONValue? {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
      if let event = framer.next() {
        switch event {
        case .message(let bytes):
          trafficTap?.record("in", payload: bytes)
          return try JSONParser.parse(bytes)
        case .error(let error): throw TestFailure("framing error from the daemon: \(error)")
        }
      }
      let remaining = deadline.timeIntervalSinceNow
      guard remaining > 0 else { return nil }
      var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
      let ready = poll(&pfd, 1, Int32(remaining * 1000) + 1)
      if ready <= 0 { continue }
      var chunk = [UInt8](repeating: 0, count: 65_536)
      let n = chunk.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
      if n <= 0 { return nil }
      chunk.withUnsafeBytes { framer.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }
  }

  /// Reads until the reply with `id` arrives; notifications are kept in ``notifications``.
  public func awaitReply(id: JSONValue, timeout: Double = testTimeout) throws -> JSONValue {
    if let index = replies.firstIndex(where: { $0["id"] == id }) { return replies.remove(at: index) }
    let deadline = Date().addingTimeInterval(timeout)
    while let message = try readMessage(timeout: max(0, deadline.timeIntervalSinceNow)) {
      if message["method"] != nil && message["id"] == nil {
        notifications.append(message)
      } else if message["id"] == id {
        return message
      } else {
        replies.append(message)
      }
    }
    throw TestFailure("no reply to request \(id.jsonString)")
  }

  /// Sends a request and returns the whole reply object.
  @discardableResult
  public func call(_ method: String, _ params: JSONValue? = nil) throws -> JSONValue {
    let id = nextID
    nextID += 1
    var message: JSONObject = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method)]
    if let params { message["params"] = params }
    try send(.object(message))
    return try awaitReply(id: .int(id))
  }

  /// Sends a request and returns its result, failing on an error reply.
  @discardableResult
  public func result(_ method: String, _ params: JSONValue? = nil) throws -> JSONValue {
    let reply = try call(method, params)
    guard let result = reply["result"] else { throw TestFailure("\(method) failed: \(reply.jsonString)") }
    return result
  }

  /// Sends a notification (no id).
  public func notify(_ method: String, _ params: JSONValue? = nil) throws {
    var message: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
    if let params { message["params"] = params }
    try send(.object(message))
  }

  /// A barrier: a request that changes nothing (`clock/now`), answered after everything the daemon sent this
  /// client before handling it. Notifications that arrive first are kept in ``notifications``, so after it returns
  /// they hold everything caused by the requests (of any client) answered before the barrier was sent. This is how
  /// a test proves that something did *not* happen, without waiting and seeing.
  public func barrier() throws {
    _ = try result("clock/now")
  }

  /// Notifications (of `method`, or all) received before a ``barrier()``, taken out of ``notifications``.
  public func notificationsBeforeBarrier(_ method: String? = nil) throws -> [JSONValue] {
    try barrier()
    let taken = notifications.filter { method == nil || $0["method"]?.stringValue == method }
    notifications.removeAll { method == nil || $0["method"]?.stringValue == method }
    return taken
  }

  /// Reads until the peer closes (true) or `timeout` (a hang guard) passes (false); messages read meanwhile are
  /// returned.
  public func readUntilEOF(timeout: Double = testTimeout) -> (messages: [JSONValue], eof: Bool) {
    var messages: [JSONValue] = []
    let deadline = Date().addingTimeInterval(timeout)
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      while let event = framer.next() {
        if case .message(let bytes) = event, let value = try? JSONParser.parse(bytes) { messages.append(value) }
      }
      let remaining = deadline.timeIntervalSinceNow
      guard remaining > 0 else { return (messages, false) }
      var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
      if poll(&pfd, 1, Int32(remaining * 1000) + 1) <= 0 { continue }
      let n = chunk.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
      if n <= 0 { return (messages, true) }
      chunk.withUnsafeBytes { framer.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }
  }

  /// `initialize` with protocol 1.0.
  @discardableResult
  public func initialize(name: String = "tests") throws -> JSONValue {
    try result("initialize", ["protocolVersion": "1.0", "clientInfo": ["name": .string(name)]])
  }

  /// The next notification (optionally of one method), waiting up to `timeout`.
  public func nextNotification(_ method: String? = nil, timeout: Double = testTimeout) throws -> JSONValue? {
    if let index = notifications.firstIndex(where: { method == nil || $0["method"]?.stringValue == method }) {
      return notifications.remove(at: index)
    }
    let deadline = Date().addingTimeInterval(timeout)
    while let message = try readMessage(timeout: max(0, deadline.timeIntervalSinceNow)) {
      if message["id"] != nil && message["method"] == nil {
        replies.append(message)
        continue
      }
      if method == nil || message["method"]?.stringValue == method { return message }
      notifications.append(message)
    }
    return nil
  }
}

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
