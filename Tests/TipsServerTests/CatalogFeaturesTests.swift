import Foundation
import Testing
import TipsJSON
import TipsTestSupport

/// Issue #12 through the real daemon: the start-up checks, declared events with --strict-events, templates, and
/// the demo catalog with its message files.
@Suite struct CatalogFeaturesTests {
  static func write(_ catalog: JSONValue, to path: String) throws {
    try Data(catalog.serialized()).write(to: URL(fileURLWithPath: path + ".tmp"))
    guard rename(path + ".tmp", path) == 0 else { throw TestFailure("rename failed") }
  }

  /// Runs `tipsd serve --stdio` with `arguments` until it exits (a daemon that starts reads end of input and stops):
  /// its exit status and stderr.
  static func serveUntilExit(_ arguments: [String]) throws -> (status: Int32, log: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tipsdBinary())
    process.arguments = ["serve", "--stdio", "--datastore", ":memory:"] + arguments
    let stderr = Pipe()
    process.standardError = stderr
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, log)
  }

  static let events: JSONValue = [
    ["id": "search.opened", "description": "The search screen opened"],
    ["id": "trail.viewed", "description": "A trail's page opened"],
  ]
  static let template: JSONValue = [
    "id": "trail.new.{trailId}", "title": "New: {trailName}",
    "rules": [
      ["event": "trail.viewed", "where": ["trailId": "{trailId}"], "count": ["gte": 1], "within": ["days": 7]]
    ],
    "removal": "r", "sync": "local",
  ]
  static let searchTip: JSONValue = [
    "id": "search.tip", "title": "Search", "removal": "r", "sync": "local",
    "rules": [["event": "search.opened", "within": ["days": 1], "count": ["gte": 1]]],
  ]

  @Test func aCatalogWithLintErrorsDoesNotStartAndWarningsAreLogged() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = "\(directory)/catalog.json"
    // serach.opened: not declared (a typo of search.opened).
    try Self.write(
      [
        "events": Self.events,
        "tips": [["id": "typo.tip", "title": "T", "rules": [["event": "serach.opened", "count": ["gte": 1]]]]],
      ],
      to: path)
    let (status, log) = try Self.serveUntilExit(["--catalog", path])
    #expect(status == 1)
    #expect(log.contains("has 1 error (run `tipsd lint` on it)"))
    #expect(log.contains("catalog.json:"))
    #expect(log.contains("did you mean \\\"search.opened\\\"") || log.contains("did you mean \"search.opened\""))
    #expect(log.contains("[undeclared-event]"))

    // Only warnings (no removal, no sync, no time-constrained rule): it starts and says so.
    try Self.write(["tips": [["id": "plain.tip", "title": "P"]]], to: path)
    let daemon = try Daemon(["--catalog", path], directory: directory)
    defer { daemon.stop() }
    #expect(daemon.waitForLog("[no-removal]"))
    #expect(daemon.log.contains("[no-sync]"))
  }

  @Test func strictEventsRefusesUndeclaredDonations() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = "\(directory)/catalog.json"
    try Self.write(["events": Self.events, "tips": [Self.searchTip]], to: path)
    let strict = try Daemon(["--catalog", path, "--strict-events"], directory: directory)
    defer { strict.stop() }
    let client = try strict.connect()
    try client.initialize()
    let refused = try client.call("events/donate", ["id": "serach.opened"])
    #expect(refused["error"]?["code"] == -32602)
    #expect(
      refused["error"]?["message"]
        == "events/donate: params.id \"serach.opened\" is not an event the catalog declares (did you mean \"search.opened\"?); declare it in the catalog's events (the daemon runs with --strict-events)"
    )
    #expect(refused["error"]?["data"]?["id"] == "serach.opened")
    #expect(try client.result("events/donate", ["id": "search.opened"])["lifetime"] == 1)

    // Without the flag a typo counts (and lint is where it is caught).
    let lenient = try Daemon(["--catalog", path])
    defer { lenient.stop() }
    let other = try lenient.connect()
    try other.initialize()
    #expect(try other.result("events/donate", ["id": "serach.opened"])["lifetime"] == 1)
  }

  @Test func strictEventsNeedsDeclaredEvents() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = "\(directory)/catalog.json"
    try Self.write(["tips": [Self.searchTip]], to: path)
    // Refused for that reason, not for any start-up failure (a renamed flag, a missing binary).
    let (status, log) = try Self.serveUntilExit(["--catalog", path, "--strict-events"])
    #expect(status == 1, "\(log)")
    #expect(log.contains("--strict-events needs a --catalog that declares its events"), "\(log)")
  }

  @Test func templatesInstantiateWithStableIdsAndFollowReloads() throws {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = "\(directory)/catalog.json"
    try Self.write(["events": Self.events, "templates": [Self.template]], to: path)
    let daemon = try Daemon(["--catalog", path], directory: directory)
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize()
    let values: JSONValue = ["trailId": 42, "trailName": "North Ridge"]
    let made = try client.result("tips/instantiate", ["template": "trail.new.{trailId}", "values": values])
    #expect(made["id"] == "trail.new.42")
    #expect(made["tip"]?["title"] == "New: North Ridge")
    #expect(made["shouldDisplay"] == false)
    // The whole-string placeholder kept the number's type: a donation with trailId 42 (a number) matches.
    try client.result("events/donate", ["id": "trail.viewed", "info": ["trailId": 42]])
    try client.result("tips/displayed", ["id": "trail.new.42"])
    // Same values, same id, same state.
    let again = try client.result("tips/instantiate", ["template": "trail.new.{trailId}", "values": values])
    #expect(again["id"] == "trail.new.42")
    #expect(again["displayCount"] == 1)
    #expect(again["shouldDisplay"] == true)

    let missing = try client.call("tips/instantiate", ["template": "trail.new.{trailId}", "values": ["trailId": 1]])
    #expect(missing["error"]?["code"] == -32602)
    #expect(missing["error"]?["message"]?.stringValue?.contains("values.trailName") == true)
    let unknown = try client.call("tips/instantiate", ["template": "trail.old.{x}", "values": ["x": 1]])
    #expect(
      unknown["error"]?["message"]
        == "tips/instantiate: params.template: the catalog has no template \"trail.old.{x}\" (it has trail.new.{trailId})"
    )

    // A reload that changes the template makes its tips again (state kept); one that drops it unregisters them.
    var changed = Self.template.objectValue!
    changed["title"] = "Now open: {trailName}"
    try Self.write(["events": Self.events, "templates": [.object(changed)]], to: path)
    let reload = try client.result("catalog/reload")
    #expect(reload["changed"] == ["trail.new.42"])
    let state = try client.result("tips/status", ["ids": ["trail.new.42"]])["tips"]?[0]
    #expect(state?["tip"]?["title"] == "Now open: North Ridge")
    #expect(state?["displayCount"] == 1)
    try Self.write(["events": Self.events], to: path)
    #expect(try client.result("catalog/reload")["removed"] == ["trail.new.42"])
    #expect(try client.call("tips/status", ["ids": ["trail.new.42"]])["error"]?["code"] == -32001)
  }

  @Test func theDemoCatalogServesItsMessageFilesAndVariants() throws {
    // The messages directory beside the catalog is found without --messages.
    let daemon = try Daemon(["--catalog", demoCatalogPath(), "--install-id", "install-1"])
    defer { daemon.stop() }
    let client = try daemon.connect()
    try client.initialize(locale: "ja_JP")
    let tips = try client.result("tips/status")["tips"]?.arrayValue ?? []
    #expect(tips.count == 5)
    let filter = try #require(tips.first { $0["id"] == "filter.tip" })
    #expect(filter["tip"]?["locale"] == "ja")
    #expect(filter["variant"]?.stringValue != nil)
    let instance = try client.result(
      "tips/instantiate",
      [
        "template": "trail.new.{trailId}",
        "values": ["trailId": "north-ridge", "trailName": "North Ridge", "region": "north"],
      ])
    #expect(instance["id"] == "trail.new.north-ridge")
    #expect(instance["tip"]?["locale"] == "ja")
  }
}
