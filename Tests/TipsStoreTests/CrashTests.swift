import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsStore
import TipsSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Must match `crashChildKeepNewest` in Tests/CrashChild/main.swift.
private let childKeepNewest = 300
private let childEvents = 7

/// The `tipsd-crash-child` executable, built beside the test bundle.
private func crashChildPath() -> String? {
  var candidates: [String] = []
  if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
    candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent().path)
  }
  if let argument = CommandLine.arguments.first {
    candidates.append(URL(fileURLWithPath: argument).deletingLastPathComponent().path)
  }
  for directory in candidates {
    // The bundle may be a directory (…/tipsdPackageTests.xctest/…) or a file beside the products.
    var url = URL(fileURLWithPath: directory)
    for _ in 0..<4 {
      let candidate = url.appendingPathComponent("tipsd-crash-child").path
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
      url.deleteLastPathComponent()
    }
  }
  return nil
}

/// A running child whose stdout is a pipe we read without blocking.
private struct Child {
  let pid: pid_t
  let output: Int32
  var buffer: [UInt8] = []
  var exited = false

  static func spawn(_ executable: String, arguments: [String]) throws -> Child {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw ChildError("pipe failed: \(errno)") }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1)  // dup2 clears close-on-exec on fd 1
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    close(fds[1])
    guard rc == 0 else {
      close(fds[0])
      throw ChildError("posix_spawn \(executable) failed: \(rc)")
    }
    _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
    return Child(pid: pid, output: fds[0])
  }

  /// Reads what is available, waiting up to `milliseconds`; returns complete lines. Sets `exited` at EOF.
  mutating func readLines(waitingUpTo milliseconds: Int32) -> [String] {
    var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
    _ = poll(&poller, 1, max(milliseconds, 0))
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
      if count > 0 {
        buffer += chunk[..<count]
        continue
      }
      if count == 0 { exited = true }
      break  // EOF, or EAGAIN: nothing more for now
    }
    guard let lastNewline = buffer.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
    let complete = String(decoding: buffer[...lastNewline], as: UTF8.self)
    buffer.removeSubrange(...lastNewline)
    return complete.split(separator: "\n").map(String.init)
  }

  /// SIGKILLs the child, reaps it, then collects everything it wrote before dying (all of it is in the pipe
  /// once the child is gone, so no wait for EOF is needed).
  mutating func kill() -> [String] {
    _ = Glibc.kill(pid, SIGKILL)
    _ = try? System.waitForChild(pid)
    let lines = readLines(waitingUpTo: 0)  // reads until the pipe is empty
    close(output)
    return lines
  }
}

private struct ChildError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Checks the store against the child's contract and returns N, the number of committed mutations (they are
/// exactly 0..<N: a child continues from what it loaded).
private func verify(_ snapshot: EngineSnapshot, acknowledgedThrough maxAcked: Int) -> Int {
  var committed = 0
  for donations in snapshot.donations.values {
    for donation in donations {
      if case .int(let n)? = donation.info?["n"] { committed = max(committed, Int(n) + 1) }
    }
  }
  #expect(committed > maxAcked, "acknowledged mutation \(maxAcked) is missing: the store holds 0..<\(committed)")
  for event in 0..<childEvents {
    let expected = Array(stride(from: event, to: committed, by: childEvents).suffix(childKeepNewest))
    let stored = (snapshot.donations["e\(event)"] ?? []).map { donation -> Int in
      guard case .int(let n)? = donation.info?["n"], donation.at == Double(n) else { return -1 }
      return Int(n)
    }
    #expect(stored == expected, "event e\(event): stored donations differ from the committed ones")
  }
  let last5 = committed > 0 ? (committed - 1) / 5 * 5 : nil
  #expect(snapshot.parameters["last5"] == last5.map { .int(Int64($0)) })
  let last11 = committed > 0 ? (committed - 1) / 11 * 11 : nil
  if let last11 {
    #expect(snapshot.tipRecords["t"]?.displayCount == last11 / 11 + 1)
    #expect(snapshot.tipRecords["t"]?.lastDisplayedAt == Double(last11))
  }
  return committed
}

/// Seconds a wait may take before the test gives up (a hang guard; `TIPSD_TEST_TIMEOUT` raises it).
private let hangGuardSeconds: Double =
  ProcessInfo.processInfo.environment["TIPSD_TEST_TIMEOUT"].flatMap(Double.init).map { max($0, 10) } ?? 30

@Suite("Datastore crash safety")
struct CrashTests {
  @Test("every acknowledged mutation survives SIGKILL at random points", .timeLimit(.minutes(5)))
  func killNine() throws {
    let executable = try #require(
      crashChildPath(), "tipsd-crash-child not found beside the test bundle (build with `swift build --build-tests`)")
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("crash.sqlite")

    var generator = SystemRandomNumberGenerator()
    var maxAcked = -1
    var committed = 0
    var totalAcks = 0
    let rounds = 24
    for round in 0..<rounds {
      var child = try Child.spawn(executable, arguments: [path])
      // Wait for `ready N`: the child's view of the store must match ours.
      var lines: [String] = []
      let readyDeadline = Date().addingTimeInterval(hangGuardSeconds)
      while !lines.contains(where: { $0.hasPrefix("ready ") || $0.hasPrefix("error ") }) && !child.exited
        && Date() < readyDeadline
      {
        lines += child.readLines(waitingUpTo: 50)
      }
      let ready = try #require(lines.first { $0.hasPrefix("ready ") }, "child did not start: \(lines)")
      #expect(Int(ready.dropFirst(6)) == committed, "round \(round): child loaded a different state")

      // Let it acknowledge 5–60 more mutations, then kill it mid-flight (a count, not a time: a busy machine
      // changes how long a round takes, not what it tests; the deadline only guards against a hang).
      let killAfter = Int.random(in: 5...60, using: &generator)
      let hangGuard = Date().addingTimeInterval(hangGuardSeconds)
      while lines.count(where: { $0.hasPrefix("ack ") }) < killAfter && !child.exited && Date() < hangGuard {
        lines += child.readLines(waitingUpTo: 50)
      }
      #expect(!child.exited, "round \(round): child exited by itself: \(lines.suffix(3))")
      lines += child.kill()

      // Acks are consecutive from where the child started.
      let acks = lines.filter { $0.hasPrefix("ack ") }.compactMap { Int($0.dropFirst(4)) }
      #expect(acks == Array(committed..<(committed + acks.count)), "round \(round): acks out of order")
      if let last = acks.last { maxAcked = last }
      totalAcks += acks.count

      let store = try Datastore(path: path)
      committed = verify(try store.load(), acknowledgedThrough: maxAcked)
      store.close()
    }
    #expect(totalAcks >= rounds * 5, "the child acknowledged too few mutations to test anything (\(totalAcks))")
    print("crash test: \(rounds) SIGKILLs, \(totalAcks) acknowledged mutations, \(committed) committed")
  }
}
