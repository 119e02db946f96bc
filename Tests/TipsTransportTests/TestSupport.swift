import Foundation
import Glibc
import Synchronization
import Testing
import TipsSystem
import TipsTransport

/// A value shared between the loop thread and client threads.
final class Locked<Value: Sendable>: Sendable {
  private let mutex: Mutex<Value>
  init(_ value: Value) { mutex = Mutex(value) }
  var value: Value { mutex.withLock { $0 } }
  func update<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

private let pathCounter = Atomic<Int>(0)

/// Seconds a wait may take before the test gives up. Only a guard against hanging: a passing test never waits this
/// long, so a busy machine cannot fail it. `TIPSD_TEST_TIMEOUT` raises it.
let hangGuardSeconds: Int =
  ProcessInfo.processInfo.environment["TIPSD_TEST_TIMEOUT"].flatMap(Double.init)
  .map { max(1, Int($0.rounded(.up))) } ?? 30

/// A fresh, unused socket path under /tmp.
func temporarySocketPath(_ tag: String = "sock") -> String {
  let n = pathCounter.wrappingAdd(1, ordering: .relaxed).oldValue
  let path = "/tmp/tipsd-uv-\(getpid())-\(n)-\(UInt32.random(in: 0...UInt32.max))-\(tag)"
  unlink(path)
  return path
}

/// A started OS thread that can be waited for.
struct Spawned: Sendable {
  fileprivate let done: DispatchSemaphore
  /// Waits (up to ``hangGuardSeconds``) for the thread to finish; false if it hangs.
  @discardableResult
  func join() -> Bool { done.wait(timeout: .now() + .seconds(hangGuardSeconds)) == .success }
}

/// Runs a body on a new OS thread (never a cooperative-pool thread: the test's
/// own thread is blocked in `UVLoop.run()`). Join it before checking results.
@discardableResult
func onNewThread(_ body: @escaping @Sendable () -> Void) -> Spawned {
  let done = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    body()
    done.signal()
  }
  return Spawned(done: done)
}

/// Runs `loop` until it has nothing left to do; a non-keepalive watchdog stops
/// it (and records an issue) if it hangs.
func run(
  _ loop: UVLoop, timeoutMilliseconds: UInt64 = UInt64(hangGuardSeconds) * 1000,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let watchdog = loop.makeTimer()
  watchdog.keepsLoopAlive = false
  let timedOut = Locked(false)
  watchdog.start(afterMilliseconds: timeoutMilliseconds) {
    timedOut.update { $0 = true }
    loop.stop()
  }
  loop.run()
  watchdog.close()
  #expect(!timedOut.value, "event loop timed out", sourceLocation: sourceLocation)
}

// MARK: Plain POSIX socket client

func makeUnixAddress(_ path: String) -> sockaddr_un {
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
  return address
}

/// A blocking client socket connected to `path` (``hangGuardSeconds`` receive/send timeouts), or -errno.
func connectClient(_ path: String) -> Int32 {
  let fd = UnixSocketClient.connect(path)
  guard fd >= 0 else { return fd }
  var timeout = timeval(tv_sec: hangGuardSeconds, tv_usec: 0)
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  return fd
}

/// Writes all of `bytes`; false on error.
@discardableResult
func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
  (try? System.writeAll(fd, bytes)) != nil
}

/// Reads until EOF (or error/timeout); returns what was read and whether EOF was seen.
func readToEnd(_ fd: Int32) -> (bytes: [UInt8], sawEOF: Bool) {
  var result: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 64 * 1024)
  while true {
    let read = chunk.withUnsafeMutableBytes { b in Result { () throws(SystemError) in try System.read(fd, into: b) } }
    guard case .success(let n) = read else { return (result, false) }
    if n == 0 { return (result, true) }
    result.append(contentsOf: chunk[0..<n])
  }
}

func payload(_ count: Int, seed: Int = 0) -> [UInt8] {
  (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }
}

/// A server that echoes every byte back and closes (flushing) at EOF.
func startEchoServer(
  loop: UVLoop, path: String, expectedClients: Int,
  onClosed: @escaping (UVStream, CloseReason) -> Void = { _, _ in }
) throws -> UnixSocketServer {
  let server = try UnixSocketServer(loop: loop, path: path)
  var closed = 0
  server.onConnection = { connection in
    connection.onData = { bytes in connection.write(Array(bytes)) }
    connection.onClose = { reason in
      onClosed(connection, reason)
      closed += 1
      if closed == expectedClients { server.close() }
    }
    connection.startReading()
  }
  return server
}
