import Foundation
import Testing
import TipsJSON
import TipsTestSupport

/// A commit that fails (here: the disk is full) answers -32005 instead of acknowledging, and the daemon keeps
/// serving. Needs a tiny tmpfs, so it runs as root only (as CI does) and is skipped elsewhere.
@Suite struct DatastoreFailureTests {
  static let canMount: Bool = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

  @Test(.enabled(if: canMount, "needs root to mount a tiny tmpfs"))
  func aFailedCommitIsNeverAcknowledged() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let mountPoint = "\(directory)/full"
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=320k", "tmpfs", mountPoint]) == 0 else {
      Issue.record("cannot mount a tmpfs at \(mountPoint)")
      return
    }
    defer { _ = run("/bin/umount", ["-l", mountPoint]) }

    let daemon = try Daemon([], directory: directory, datastore: "\(mountPoint)/state.sqlite")
    defer { daemon.stop(removeDirectory: false) }
    let client = try daemon.connect()
    try client.initialize()
    let padding = String(repeating: "x", count: 2_000)
    var acknowledged = 0
    var failure: JSONValue?
    for n in 0..<5_000 {
      let reply = try client.call("events/donate", ["id": .string("e\(n % 50)"), "info": ["pad": .string(padding)]])
      if let error = reply["error"] {
        failure = error
        break
      }
      acknowledged += 1
    }
    let error = try #require(failure, "the datastore never filled up after \(acknowledged) donations")
    print("datastore-failure: \(acknowledged) donations acknowledged before the disk filled")
    #expect(acknowledged > 10, "the datastore was full from the start (\(acknowledged) donations acknowledged)")
    #expect(error["code"] == -32005)
    #expect(error["message"]?.stringValue?.contains("not committed") == true, "\(error.jsonString)")
    // The daemon logs before it replies, but its stderr reaches the test on another thread: wait for the line.
    #expect(daemon.waitForLog("datastore commit failed"), "\(daemon.log)")
    // The daemon is still there and answers what needs no commit.
    #expect(daemon.process.isRunning)
    #expect(try client.result("clock/now")["now"] != nil)
    #expect(try client.result("tips/status")["tips"] == [])
  }

  /// Runs a command and returns its exit status.
  func run(_ path: String, _ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    do {
      try process.run()
    } catch {
      return -1
    }
    process.waitUntilExit()
    return process.terminationStatus
  }
}
