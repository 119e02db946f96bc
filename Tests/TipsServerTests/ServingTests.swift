import Foundation
import Testing
import TipsFraming
import TipsJSON
import TipsTestSupport

/// End to end against the real binary: time-driven notifications on libuv timers, socket hygiene, signals, stdio and
/// durability. (Coalescing, back-pressure, vanishing subscribers and the other timing-sensitive behaviour are tested
/// in process, on the embedded loop: InProcess/.)
@Suite struct ServingTests {
  static let recentSearchTip: JSONValue = [
    "id": "recent", "title": "Recent",
    "rules": [["event": "search.opened", "within": ["minutes": 10], "count": ["gte": 1]]],
  ]

  @Test func aWindowExpiringUnderTheVirtualClockNotifiesWithNoDonation() throws {
    let daemon = try Daemon(["--clock", "virtual", "--clock-start", "5000"])
    defer { daemon.stop() }
    let watcher = try daemon.connect()
    let driver = try daemon.connect()
    try watcher.initialize()
    try driver.initialize()
    try driver.result("tips/register", ["tips": [Self.recentSearchTip]])
    try watcher.result("tips/observe", ["ids": ["recent"]])
    try driver.result("events/donate", ["id": "search.opened"])
    #expect(try watcher.nextNotification("tips/shouldDisplayChanged")?["params"]?["shouldDisplay"] == true)
    #expect(try driver.result("clock/advance", ["seconds": 599])["now"] == 5599)
    #expect(try watcher.notificationsBeforeBarrier("tips/shouldDisplayChanged") == [], "still inside the window")
    try driver.result("clock/advance", ["seconds": 1])
    let expired = try #require(try watcher.nextNotification("tips/shouldDisplayChanged"))
    #expect(expired["params"]?["shouldDisplay"] == false)
    #expect(expired["params"]?["seq"] == 2)
    let explained = try driver.result("tips/explain", ["id": "recent"])
    #expect(explained["shouldDisplay"] == false)
  }

  @Test func aWindowExpiringOnTheSystemClockNotifiesFromATimer() throws {
    let daemon = try Daemon(["--log-level", "debug"])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    // 0.02 minutes = 1.2 s.
    try client.result(
      "tips/register",
      [
        "tips": [
          ["id": "brief", "title": "B", "rules": [["event": "tap", "within": ["minutes": 0.02], "count": ["gte": 1]]]]
        ]
      ])
    try client.result("tips/observe", ["ids": ["brief"]])
    // The donation is stamped after this instant, so the window cannot close before `sent + 1.2 s`, however busy
    // the machine (a lower bound only; how late the notification comes is not checked).
    let sent = Date()
    try client.result("events/donate", ["id": "tap"])
    let shown = try client.nextNotification("tips/shouldDisplayChanged")
    #expect(shown?["params"]?["shouldDisplay"] == true, "daemon log:\n\(daemon.log)")
    // Comes from the daemon's timer (see TimeDriverTests for the early timer that once left it unarmed).
    let expired = try #require(try client.nextNotification("tips/shouldDisplayChanged"), "daemon log:\n\(daemon.log)")
    #expect(expired["params"]?["shouldDisplay"] == false)
    #expect(Date().timeIntervalSince(sent) >= 1.1)
  }

  @Test func socketHygiene() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = "\(directory)/tipsd.sock"
    // A live daemon refuses a second one on the same path.
    let first = try Daemon([], directory: directory)
    var info = stat()
    #expect(stat(path, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    let second = Process()
    second.executableURL = URL(fileURLWithPath: tipsdBinary())
    second.arguments = ["serve", "--socket", path, "--datastore", ":memory:"]
    let errors = Pipe()
    second.standardError = errors
    try second.run()
    second.waitUntilExit()
    #expect(second.terminationStatus != 0)
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(message.contains("another tipsd is serving"), "\(message)")

    // SIGTERM: exit 0 and the socket is removed.
    first.signal(SIGTERM)
    #expect(try first.wait() == 0)
    #expect(!FileManager.default.fileExists(atPath: path))

    // A stale socket left by a killed daemon is replaced.
    let killed = try Daemon([], directory: directory)
    killed.signal(SIGKILL)
    _ = try killed.wait()
    #expect(FileManager.default.fileExists(atPath: path))
    let replacement = try Daemon([], directory: directory)
    let client = try replacement.connect()
    try client.initialize()
    replacement.stop(removeDirectory: false)

    // A regular file or a symlink at the path is refused and left alone.
    _ = FileManager.default.createFile(atPath: path, contents: Data("keep".utf8))
    let refused = Process()
    refused.executableURL = URL(fileURLWithPath: tipsdBinary())
    refused.arguments = ["serve", "--socket", path, "--datastore", ":memory:"]
    refused.standardError = Pipe()
    try refused.run()
    refused.waitUntilExit()
    #expect(refused.terminationStatus != 0)
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep")
  }

  @Test func stdioExitsCleanlyWhenStdinCloses() throws {
    let daemon = try Daemon([], socket: false)
    defer { daemon.stop() }
    let client = daemon.stdioClient()
    try client.initialize()
    try client.send(["jsonrpc": "2.0", "id": 5, "method": "events/donate", "params": ["id": "last"]])
    try daemon.stdin.fileHandleForWriting.close()
    // The reply to the last request still arrives before the exit.
    #expect(try client.awaitReply(id: 5)["result"]?["count"] == 1)
    #expect(try daemon.wait() == 0)
    #expect(!daemon.log.isEmpty)  // logs went to stderr, never to stdout
  }

  @Test func stdioWorksWithRegularFiles() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let requests = """
      {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1.0","clientInfo":{"name":"file"}}}
      {"jsonrpc":"2.0","id":2,"method":"events/donate","params":{"id":"e"}}
      {"jsonrpc":"2.0","id":3,"method":"events/donate","params":{"id":"e"}}

      """
    _ = FileManager.default.createFile(atPath: "\(directory)/in.jsonl", contents: Data(requests.utf8))
    _ = FileManager.default.createFile(atPath: "\(directory)/out.jsonl", contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tipsdBinary())
    process.arguments = ["serve", "--stdio", "--datastore", ":memory:"]
    process.standardInput = FileHandle(forReadingAtPath: "\(directory)/in.jsonl")
    process.standardOutput = FileHandle(forWritingAtPath: "\(directory)/out.jsonl")
    process.standardError = Pipe()
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    let lines = try String(contentsOfFile: "\(directory)/out.jsonl", encoding: .utf8).split(separator: "\n")
    #expect(lines.count == 3)
    #expect(try JSONParser.parse(String(lines[2]))["result"]?["count"] == 2)
  }

  @Test func stateSurvivesARestart() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let datastore = "\(directory)/state.sqlite"
    do {
      let daemon = try Daemon([], directory: directory, datastore: datastore)
      let client = try daemon.connect()
      try client.initialize()
      try client.result("tips/register", ["tips": [filterTip]])
      for _ in 0..<3 { try client.result("events/donate", ["id": "search.opened", "info": ["n": 1]]) }
      try client.result("tips/displayed", ["id": "filter.tip", "duration": 4.5])
      try client.result("tips/invalidate", ["id": "filter.tip", "reason": "tipClosed"])
      // SIGKILL: nothing acknowledged may be lost.
      daemon.signal(SIGKILL)
      _ = try daemon.wait()
      daemon.stop(removeDirectory: false)
    }
    let daemon = try Daemon([], directory: directory, datastore: datastore)
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    try client.result("tips/register", ["tips": [filterTip]])
    let state = try client.result("tips/status", ["ids": ["filter.tip"]])["tips"]?[0]
    #expect(state?["status"] == "invalidated")
    #expect(state?["reason"] == "tipClosed")
    #expect(state?["displayCount"] == 1)
    #expect(state?["displayedDuration"] == 4.5)
    #expect(try client.result("events/donate", ["id": "search.opened"])["count"] == 4)
  }

  @Test func tipsdCallPrintsTheResult() throws {
    let daemon = try Daemon(["--catalog", demoCatalogPath()])
    defer { daemon.stop() }
    let call = Process()
    call.executableURL = URL(fileURLWithPath: tipsdBinary())
    call.arguments = ["call", "--socket", daemon.socketPath!, "events/donate", #"{"id": "search.opened"}"#]
    let output = Pipe()
    call.standardOutput = output
    try call.run()
    call.waitUntilExit()
    #expect(call.terminationStatus == 0)
    let printed = try JSONParser.parse(Array(output.fileHandleForReading.readDataToEndOfFile()))
    #expect(printed["count"] == 1)

    let failing = Process()
    failing.executableURL = URL(fileURLWithPath: tipsdBinary())
    failing.arguments = ["call", "--socket", daemon.socketPath!, "tips/explain", #"{"id": "nope"}"#]
    let errors = Pipe()
    failing.standardError = errors
    failing.standardOutput = Pipe()
    try failing.run()
    failing.waitUntilExit()
    #expect(failing.terminationStatus == 1)
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(message.contains("-32001"), "\(message)")
  }
}

/// `catalog/demo.json` in the package.
func demoCatalogPath() -> String {
  var url = URL(fileURLWithPath: #filePath)
  while url.path != "/" {
    url.deleteLastPathComponent()
    let candidate = url.appendingPathComponent("catalog/demo.json")
    if FileManager.default.fileExists(atPath: candidate.path) { return candidate.path }
  }
  return "catalog/demo.json"
}
