import Foundation
import TipsTransport

// Redis as a bench peer (issue #15): `redis-server` on a private Unix socket with the same durability promise as
// tipsd's default (an append-only file, fsync once a second), doing the equivalent of one `events/donate` per
// request as one `EVAL` — LPUSH the donation, LTRIM to the newest 1000, return LLEN. RESP is written by hand here
// (no client library), and replies are counted without parsing, as the tipsd figures count lines.

/// A `redis-server` process serving only a Unix socket in its own directory.
final class RedisPeer {
  let process = Process()
  let socketPath: String

  /// The server binary (`REDIS_SERVER`, else redis-server on the usual paths); nil when none is installed.
  static func executable() -> String? {
    if let chosen = ProcessInfo.processInfo.environment["REDIS_SERVER"] {
      return FileManager.default.isExecutableFile(atPath: chosen) ? chosen : nil
    }
    return ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  /// Starts redis-server with its data and socket in `directory`: AOF on with `appendfsync everysec` (an
  /// acknowledged write survives the process being killed, as tipsd's default `synchronous=NORMAL` in WAL mode
  /// does), no RDB snapshots (tipsd has none either: its only store is the database it writes through), no TCP.
  init(executable: String, directory: String) throws {
    socketPath = "\(directory)/redis.sock"
    let config = """
      port 0
      unixsocket \(socketPath)
      unixsocketperm 700
      dir \(directory)
      appendonly yes
      appendfsync everysec
      save ""
      daemonize no
      logfile ""
      loglevel warning
      """
    let configPath = "\(directory)/redis.conf"
    try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = [configPath]
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    let deadline = Date().addingTimeInterval(10)
    while UnixSocketClient.connect(socketPath).closingIfValid() < 0 {
      guard process.isRunning, Date() < deadline else { throw BenchError("\(executable) did not start") }
      usleep(2_000)
    }
  }

  func stop() {
    process.terminate()
    process.waitUntilExit()
  }

  /// The script: the donation goes to the head of the event's list, which keeps the newest 1000.
  static let script = """
    redis.call('LPUSH', KEYS[1], ARGV[1]) redis.call('LTRIM', KEYS[1], 0, 999) return redis.call('LLEN', KEYS[1])
    """

  /// `EVAL script 1 donations:search.opened <donation>` in RESP; the donation names the event and a sequence
  /// number (the size of what tipsd stores for a donation without info: an event id and a date).
  static func evalRequest(_ sequence: Int) -> [UInt8] {
    let donation = #"{"id":"search.opened","at":\#(sequence)}"#
    return resp(["EVAL", script, "1", "donations:search.opened", donation])
  }

  /// A RESP array of bulk strings.
  static func resp(_ arguments: [String]) -> [UInt8] {
    var out = Array("*\(arguments.count)\r\n".utf8)
    for argument in arguments {
      out += Array("$\(argument.utf8.count)\r\n".utf8)
      out += Array(argument.utf8)
      out += [13, 10]
    }
    return out
  }
}

extension Int32 {
  /// Closes a descriptor that connected; returns the value (a negative errno when it did not).
  fileprivate func closingIfValid() -> Int32 {
    if self >= 0 { close(self) }
    return self
  }
}

/// One blocking connection to Redis: writes RESP, counts integer replies.
final class RedisConnection {
  let fd: Int32
  private var buffer = [UInt8](repeating: 0, count: 1 << 16)

  init(path: String) throws {
    fd = UnixSocketClient.connect(path)
    guard fd >= 0 else { throw BenchError("connect \(path): \(String(cString: strerror(-fd)))") }
  }

  deinit { close(fd) }

  func send(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
      if n < 0 && errno == EINTR { continue }
      precondition(n > 0, "redis: write failed")
      offset += n
    }
  }

  /// Reads until at least `count` replies arrived; each is one `:N\r\n` line (an error reply stops the bench).
  func readReplies(atLeast count: Int) -> Int {
    var got = 0
    while got < count {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
      if n < 0 && errno == EINTR { continue }
      precondition(n > 0, "redis: connection closed")
      for i in 0..<n where buffer[i] == 0x0A { got += 1 }
    }
    return got
  }

  /// One request and its whole reply, as text (the check that the script answers an integer).
  func roundTrip(_ request: [UInt8]) -> String {
    send(request)
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
    precondition(n > 0, "redis: connection closed")
    return String(decoding: buffer[0..<n], as: UTF8.self)
  }
}

/// `EVAL`s per second with up to `window` in flight, sent `batch` at a time (as `pipelined` sends tipsd requests).
func pipelinedRedis(_ path: String, requests: Int, window: Int, batch: Int = 64) throws -> Double {
  let connection = try RedisConnection(path: path)
  let check = connection.roundTrip(RedisPeer.evalRequest(0))
  guard check.hasPrefix(":") else { throw BenchError("redis: EVAL answered \(check)") }
  return pipelinedRate(
    requests: requests, window: window, batch: batch, request: RedisPeer.evalRequest, send: connection.send,
    receive: { connection.readReplies(atLeast: 1) })
}
