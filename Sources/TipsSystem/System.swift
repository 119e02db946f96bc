// One funnel for POSIX calls (the shape of NIOPosix's `syscall(where:)`): errno captured right after the call,
// EINTR retried, a typed error naming what was attempted. Used by the store, the transport's file pump, the
// logger, the command line and the blocking client instead of hand-written retry loops.
#if canImport(Glibc)
  import Glibc
#endif

/// A failed system call.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The `errno` the call left.
  public let code: Int32
  /// What was attempted, e.g. `"open /etc/tipsd.json"`.
  public let operation: String

  public init(code: Int32, operation: String) {
    self.code = code
    self.operation = operation
  }

  /// `open /x: No such file or directory`.
  public var description: String { "\(operation): \(System.message(code))" }
  /// The text of the error alone.
  public var reason: String { System.message(code) }
}

public enum System {
  /// Seconds on the monotonic clock (`CLOCK_MONOTONIC`): durations and deadlines, never wall time.
  public static func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
  }

  /// Seconds since the Unix epoch on the real-time clock (`CLOCK_REALTIME`): instants people read, never durations.
  public static func wallClockSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
  }

  /// Runs `body` — a call returning -1 (or any negative value) and setting `errno` on failure — retrying while it
  /// fails with EINTR. Returns the call's result, or throws with the `errno` it left.
  @discardableResult
  public static func call<T: BinaryInteger>(_ operation: @autoclosure () -> String, _ body: () -> T) throws(SystemError)
    -> T
  {
    while true {
      let result = body()
      if result >= 0 { return result }
      let code = errno
      if code == EINTR { continue }
      throw SystemError(code: code, operation: operation())
    }
  }

  /// The text of an `errno` value.
  public static func message(_ code: Int32) -> String { String(cString: strerror(code)) }

  /// Writes all of `bytes` to `fd`: `send(MSG_NOSIGNAL)` on a socket (a vanished peer is an EPIPE error, not a
  /// SIGPIPE), `write` on anything else.
  public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, what: @autoclosure () -> String = "write")
    throws(SystemError)
  {
    guard let base = bytes.baseAddress else { return }
    var offset = 0
    var useSend = true
    while offset < bytes.count {
      let n: Int
      if useSend {
        let sent = Glibc.send(fd, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
        if sent < 0 && errno == ENOTSOCK {
          useSend = false
          continue
        }
        if sent < 0 && errno == EINTR { continue }
        if sent < 0 { throw SystemError(code: errno, operation: what()) }
        n = sent
      } else {
        n = try call(what()) { Glibc.write(fd, base + offset, bytes.count - offset) }
      }
      offset += n
    }
  }

  /// Writes all of `bytes` to `fd` (see ``writeAll(_:_:what:)``).
  public static func writeAll(_ fd: Int32, _ bytes: [UInt8], what: @autoclosure () -> String = "write")
    throws(SystemError)
  {
    let outcome = bytes.withUnsafeBytes { buffer in
      Result { () throws(SystemError) in try writeAll(fd, buffer, what: what()) }
    }
    try outcome.get()
  }

  /// Reads once into `buffer`; 0 at end of input.
  public static func read(
    _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, what: @autoclosure () -> String = "read"
  )
    throws(SystemError) -> Int
  {
    try call(what()) { Glibc.read(fd, buffer.baseAddress, buffer.count) }
  }

  /// A whole file's bytes.
  public static func readFile(_ path: String) throws(SystemError) -> [UInt8] {
    let fd = try call("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let n = try chunk.withUnsafeMutableBytes { buffer in
        Result { () throws(SystemError) in try read(fd, into: buffer, what: "read \(path)") }
      }.get()
      if n == 0 { return bytes }
      bytes.append(contentsOf: chunk[0..<n])
    }
  }

  /// Whether something exists at `path`.
  public static func fileExists(_ path: String) -> Bool {
    access(path, F_OK) == 0
  }

  /// Copies `source` to `destination` until end of input or an error; returns whether it reached the end.
  @discardableResult
  public static func copy(from source: Int32, to destination: Int32) -> Bool {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
      let read = buffer.withUnsafeMutableBytes { b in
        Result { () throws(SystemError) in try System.read(source, into: b) }
      }
      guard case .success(let n) = read else { return false }
      if n == 0 { return true }
      let written = buffer.withUnsafeBytes { b in
        Result { () throws(SystemError) in try writeAll(destination, UnsafeRawBufferPointer(rebasing: b[0..<n])) }
      }
      guard case .success = written else { return false }
    }
  }

  /// Waits for a child process; returns its raw wait status.
  public static func waitForChild(_ pid: Int32) throws(SystemError) -> Int32 {
    var status: Int32 = 0
    try call("waitpid \(pid)") { waitpid(pid, &status, 0) }
    return status
  }
}
