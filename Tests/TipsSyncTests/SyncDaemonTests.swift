import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsStore
import TipsTestSupport

/// Real daemons of one account syncing through a real PostgreSQL (a private server per test, see
/// ``PostgresServer``): random changes on every device under clocks an hour apart, then every device holds the same
/// state — compared in full: every synced tip's status, reason, counts and duration, and from the datastores every
/// donation, lifetime count, parameter and tip record. Nothing waits for time to pass: every wait is for a condition
/// (converged outboxes and cursors, a notification), with a hang guard. Serialized: each test runs its own
/// PostgreSQL server and up to four daemons, plenty for a shared two-core machine.
@Suite(.serialized) struct SyncDaemonTests {
  static let baseSeed = SeededGenerator.seed()

  /// One random change (or a clock move) on `device`, over its protocol.
  /// (Datastore resets are made at a chosen point instead: a random one late in a run would leave little to compare.)
  static func randomChange(_ device: Device, _ random: inout SeededGenerator) throws {
    let tip = SyncFixture.tips[Int.random(in: 0..<SyncFixture.tips.count, using: &random)]
    let infos: [JSONValue?] = [nil, ["region": "north"], ["region": "south"], ["region": "north", "n": 1]]
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<35:
      var params: JSONObject = ["id": .string(SyncFixture.events[Int.random(in: 0..<3, using: &random)])]
      if let info = infos[Int.random(in: 0..<infos.count, using: &random)] { params["info"] = info }
      try device.call("events/donate", .object(params))
    case 35..<55:
      try device.call(
        "tips/displayed", ["id": .string(tip), "duration": .int(Int64.random(in: 0..<30, using: &random))])
    case 55..<65:
      let reason = InvalidationReason.allCases[Int.random(in: 0..<4, using: &random)]
      try device.call("tips/invalidate", ["id": .string(tip), "reason": .string(reason.rawValue)])
    case 65..<73:
      try device.call("tips/resetEligibility", ["id": .string(tip)])
    case 73..<83:
      if Bool.random(using: &random) {
        try device.call("parameters/set", ["id": "loggedIn", "value": .bool(Bool.random(using: &random))])
      } else {
        try device.call("parameters/set", ["id": "level", "value": .int(Int64.random(in: 0..<4, using: &random))])
      }
    default:
      try device.call("clock/advance", ["seconds": .int(Int64.random(in: 0..<600, using: &random))])
    }
  }

  /// Sets every device's clock to one instant, then compares every synced tip's state live, and every datastore.
  static func expectIdentical(
    _ devices: [Device], seed: RunSeed, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let instant = try devices.map { try $0.call("clock/now")["now"]?.doubleValue ?? 0 }.max()! + 1
    for device in devices { try device.call("clock/set", ["now": .double(instant)]) }
    let states = try devices.map { try $0.tipStates(SyncFixture.syncedTips) }
    for (index, state) in states.enumerated().dropFirst() {
      #expect(
        state == states[0], "\(devices[index].name) vs \(devices[0].name) (\(seed))", sourceLocation: sourceLocation)
    }
    let snapshots = try devices.map { ComparableState(try $0.stopAndLoad()) }
    if ProcessInfo.processInfo.environment["TIPSD_SYNC_DUMP"] != nil {
      print("\(devices[0].name), \(seed):\n\(snapshots[0])\nstates: \(states[0])")
    }
    for (index, snapshot) in snapshots.enumerated().dropFirst() {
      #expect(
        snapshot == snapshots[0],
        "\(devices[index].name) differs from \(devices[0].name) (\(seed)):\n\(snapshot)\n--- vs ---\n\(snapshots[0])",
        sourceLocation: sourceLocation)
    }
  }

  /// Waits for a condition checked with queries (a hang guard only).
  func expectEventually(_ what: String, _ condition: () throws -> Bool) throws {
    var failure: (any Error)?
    let held = waitUntil(timeout: testTimeout * 3) {
      do {
        return try condition()
      } catch {
        failure = error
        return false
      }
    }
    if !held { throw TestFailure("\(what): never happened\(failure.map { " (\($0))" } ?? "")") }
  }

  @Test func twoDevicesConverge() {
    RunSeed(base: Self.baseSeed).run("SyncDaemonTests.twoDevicesConverge", twoDevicesConverge)
  }

  func twoDevicesConverge(_ seed: RunSeed) throws {
    var random = SeededGenerator(seed: seed.value)
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let catalog = try SyncFixture.writeCatalog(in: postgres.directory)
    let devices = [
      try Device("phone", url: postgres.url, skew: -3600, catalog: catalog),
      try Device("tablet", url: postgres.url, skew: 3600, catalog: catalog),
    ]
    defer { for device in devices { device.destroy() } }
    for step in 0..<200 {
      let device = devices[Int.random(in: 0..<2, using: &random)]
      // One datastore reset early on: the account's state before it is gone on both devices.
      if step == 40 { try device.call("datastore/reset") }
      try Self.randomChange(device, &random)
    }
    try waitUntilConverged(devices, postgres: postgres)
    try Self.expectIdentical(devices, seed: seed)
  }

  /// Three devices online, PostgreSQL stopped and restarted while they keep changing things, one daemon SIGKILLed
  /// right after a burst (mid-push) and restarted, and a fourth device offline for the whole run that joins at the
  /// end.
  @Test func threeDevicesConvergeThroughFailures() {
    RunSeed(base: Self.baseSeed, offset: 1).run(
      "SyncDaemonTests.threeDevicesConvergeThroughFailures", threeDevicesConvergeThroughFailures)
  }

  func threeDevicesConvergeThroughFailures(_ seed: RunSeed) throws {
    var random = SeededGenerator(seed: seed.value)
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let catalog = try SyncFixture.writeCatalog(in: postgres.directory)
    let phone = try Device("phone", url: postgres.url, skew: -3600, catalog: catalog)
    let tablet = try Device("tablet", url: postgres.url, skew: 0, catalog: catalog)
    let laptop = try Device("laptop", url: postgres.url, skew: 3600, catalog: catalog)
    let offline = try Device("watch", url: PostgresServer.unreachableURL, skew: 1800, catalog: catalog)
    let devices = [phone, tablet, laptop, offline]
    defer { for device in devices { device.destroy() } }
    func changes(_ count: Int, on candidates: [Device]) throws {
      for _ in 0..<count {
        try Self.randomChange(candidates[Int.random(in: 0..<candidates.count, using: &random)], &random)
      }
    }

    try changes(30, on: devices)
    try laptop.call("datastore/reset")
    try changes(50, on: devices)
    try postgres.stop()
    try changes(60, on: devices)
    #expect(try phone.syncStatus()["state"] != "connected", "\(seed)")
    try postgres.start()
    try changes(20, on: devices)

    // SIGKILL mid-push: a psql session holds the account's row lock, so the tablet's push of a burst waits inside
    // PostgreSQL; the tablet is killed while it waits and restarted. When the lock goes, the dead daemon's push
    // commits anyway while its outbox still holds the batch: the restarted one pushes it again and PostgreSQL keeps
    // one copy (account, device, seq).
    let lock = try postgres.session("BEGIN; SELECT 1 FROM tipsd.accounts WHERE account = 'alice' FOR UPDATE;")
    defer { lock.release() }
    try expectEventually("the psql session holds the lock") {
      try postgres.query("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'").hasPrefix("1")
    }
    for index in 0..<40 { try tablet.call("events/donate", ["id": "e2", "info": ["burst": .int(Int64(index))]]) }
    try expectEventually("a push waits for the lock") {
      try postgres.query(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tipsd' AND wait_event_type = 'Lock'"
      ).trimmingCharacters(in: .whitespacesAndNewlines) != "0"
    }
    try tablet.killAndRestart()
    lock.release()

    try changes(60, on: devices)
    #expect(try offline.syncStatus()["state"] != "connected", "\(seed)")
    #expect((try offline.syncStatus()["outbox"]?.intValue ?? 0) > 0, "\(seed)")
    try offline.restart(url: postgres.url)
    try waitUntilConverged(devices, postgres: postgres)
    try Self.expectIdentical(devices, seed: seed)
  }

  /// An invalidation on one device reaches a subscriber on another as `shouldDisplay: false`, and a `"sync": "local"`
  /// tip's does not.
  @Test func invalidationReachesAnotherDevicesSubscriber() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let catalog = try SyncFixture.writeCatalog(in: postgres.directory)
    let phone = try Device("phone", url: postgres.url, skew: -3600, catalog: catalog)
    let tablet = try Device("tablet", url: postgres.url, skew: 3600, catalog: catalog)
    defer {
      phone.destroy()
      tablet.destroy()
    }
    let observer = try tablet.daemon.connect()
    defer { observer.close() }
    try observer.initialize(name: "observer")
    let observed = try observer.result("tips/observe", ["ids": ["count.tip", "local.tip"]])
    #expect(observed["tips"]?[0]?["shouldDisplay"] == false)
    #expect(observed["tips"]?[1]?["shouldDisplay"] == true)

    for _ in 0..<3 { try phone.call("events/donate", ["id": "e1"]) }
    let shown = try #require(try observer.nextNotification("tips/shouldDisplayChanged", timeout: testTimeout * 3))
    #expect(shown["params"]?["id"] == "count.tip" && shown["params"]?["shouldDisplay"] == true)

    try phone.call("tips/invalidate", ["id": "local.tip", "reason": "tipClosed"])
    try phone.call("tips/invalidate", ["id": "count.tip", "reason": "tipClosed"])
    let hidden = try #require(try observer.nextNotification("tips/shouldDisplayChanged", timeout: testTimeout * 3))
    #expect(hidden["params"]?["id"] == "count.tip")
    #expect(hidden["params"]?["shouldDisplay"] == false)
    #expect(hidden["params"]?["status"] == "invalidated" && hidden["params"]?["reason"] == "tipClosed")

    // local.tip's invalidation was made before count.tip's and never left the phone: nothing about it came first.
    try waitUntilConverged([phone, tablet], postgres: postgres)
    #expect(try observer.notificationsBeforeBarrier("tips/shouldDisplayChanged").isEmpty)
    #expect(try tablet.tipStates(["local.tip"])["local.tip"]?["status"] == "available")
    #expect(try phone.tipStates(["local.tip"])["local.tip"]?["status"] == "invalidated")
  }

  /// Two accounts in one database: neither sees anything of the other's.
  @Test func accountsAreIsolated() {
    RunSeed(base: Self.baseSeed, offset: 2).run("SyncDaemonTests.accountsAreIsolated", accountsAreIsolated)
  }

  func accountsAreIsolated(_ seed: RunSeed) throws {
    var random = SeededGenerator(seed: seed.value)
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let catalog = try SyncFixture.writeCatalog(in: postgres.directory)
    let alicePhone = try Device("phone", url: postgres.url, account: "alice", skew: -3600, catalog: catalog)
    let aliceTablet = try Device("tablet", url: postgres.url, account: "alice", skew: 0, catalog: catalog)
    let bob = try Device("phone", url: postgres.url, account: "bob", skew: 3600, catalog: catalog)
    defer { for device in [alicePhone, aliceTablet, bob] { device.destroy() } }

    for _ in 0..<60 {
      try Self.randomChange(Bool.random(using: &random) ? alicePhone : aliceTablet, &random)
    }
    try bob.call("events/donate", ["id": "e3", "info": ["owner": "bob"]])
    try bob.call("parameters/set", ["id": "level", "value": 3])
    try waitUntilConverged([alicePhone, aliceTablet], postgres: postgres)
    try waitUntilConverged([bob], postgres: postgres)

    // Bob's device pulled its account's log (its cursor is its own two operations) and holds only what it did.
    #expect(try bob.syncStatus()["cursor"] == 2, "\(seed)")
    let bobState = ComparableState(try bob.stopAndLoad())
    #expect(bobState.donations.keys.sorted() == ["e3"], "\(seed)")
    #expect(bobState.donations["e3"]?.count == 1, "\(seed)")
    #expect(bobState.parameters == ["level": 3], "\(seed)")
    #expect(bobState.records.isEmpty, "\(seed)")
    let alice = ComparableState(try alicePhone.stopAndLoad())
    #expect(!(alice.donations["e3"] ?? []).contains { $0.info?["owner"] == "bob" }, "\(seed)")
    let bobOps = try postgres.query("SELECT count(*) FROM tipsd.ops WHERE account = 'bob'")
    #expect(bobOps.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "\(seed)")
    let accounts = try postgres.query("SELECT DISTINCT account FROM tipsd.accounts ORDER BY 1")
    #expect(accounts.split(separator: "\n") == ["alice", "bob"], "\(seed)")
  }

  /// While PostgreSQL is unreachable the outbox is bounded: superseded operations merge (displays of one tip, values
  /// of one parameter), and past the limit synced changes are refused with -32012 and nothing changes; the rest of the
  /// protocol keeps working. Once PostgreSQL is back the outbox drains and changes are accepted again.
  @Test func fullOutboxRefusesSyncedChanges() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let catalog = try SyncFixture.writeCatalog(in: postgres.directory)
    let device = try Device(
      "phone", url: PostgresServer.unreachableURL, catalog: catalog, extraArguments: ["--sync-outbox-limit", "5"])
    defer { device.destroy() }
    for duration in [1, 2, 3] {
      try device.call("tips/displayed", ["id": "count.tip", "duration": .int(Int64(duration))])
    }
    for level in [1, 2, 3] { try device.call("parameters/set", ["id": "level", "value": .int(Int64(level))]) }
    #expect(try device.syncStatus()["outbox"] == 2)
    for _ in 0..<3 { try device.call("events/donate", ["id": "e1"]) }
    #expect(try device.syncStatus()["outbox"] == 5)

    let refused = try device.client.call("events/donate", ["id": "e1"])
    #expect(refused["error"]?["code"] == -32012)
    #expect(refused["error"]?["data"]?["limit"] == 5)
    #expect(
      try device.call("tips/explain", ["id": "count.tip"])["rules"]?[0]?["detail"]?.stringValue?.contains("=3") == true)
    #expect(try device.client.call("tips/invalidate", ["id": "count.tip"])["error"]?["code"] == -32012)
    #expect(try device.tipStates(["count.tip"])["count.tip"]?["status"] != "invalidated")
    try device.call("tips/configure", ["displayFrequency": "daily"])  // not synced: still accepted
    #expect(device.daemon.waitForLog("sync outbox full"))

    try device.restart(url: postgres.url)
    try waitUntilConverged([device], postgres: postgres)
    try device.call("events/donate", ["id": "e1"])
  }

  /// The password of the --sync URL never reaches the log or sync/status; `tipsd sync status` prints the state.
  @Test func credentialsAreNeverLogged() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let catalog = try SyncFixture.writeCatalog(in: postgres.directory)
    let password = "s3cr3t-Pa55"
    let device = try Device("phone", url: postgres.url(password: password), catalog: catalog)
    defer { device.destroy() }
    try device.call("events/donate", ["id": "e1"])
    try waitUntilConverged([device], postgres: postgres)
    let status = try device.syncStatus()
    #expect(status["server"]?.stringValue?.contains(":***@") == true)
    #expect(status["enabled"] == true && status["account"] == "alice" && status["device"] == "phone")
    #expect(status["lastPushAt"]?.doubleValue != nil && status["lastPullAt"]?.doubleValue != nil)

    let command = Process()
    command.executableURL = URL(fileURLWithPath: tipsdBinary())
    command.arguments = ["sync", "status", "--socket", device.daemon.socketPath ?? ""]
    let output = Pipe()
    command.standardOutput = output
    try command.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    command.waitUntilExit()
    #expect(command.terminationStatus == 0)
    #expect(text.contains("state: connected") && text.contains("outbox: 0") && text.contains("last push: 20"))
    #expect(!text.contains(password))

    // Lose the connection once, so the log holds an error too.
    try postgres.stop()
    #expect(device.daemon.waitForLog("PostgreSQL unreachable"))
    try postgres.start()
    try waitUntilConverged([device], postgres: postgres)
    // The log is read on another thread: wait for the second "sync connected" line, then look at all of it.
    #expect(waitUntil { device.daemon.log.components(separatedBy: "msg=\"sync connected\"").count >= 3 })
    #expect(!device.daemon.log.contains(password))
    #expect(device.daemon.log.contains("server=\"postgresql://postgres:***@"))
  }

  /// A server named by host name over TCP: the name is resolved on libuv's thread pool and handed to libpq as
  /// `hostaddr` (libpq's own lookup would block the loop); an unresolvable name is a connection failure like any other.
  @Test func hostNamesAreResolvedOffTheLoop() throws {
    let postgres = try PostgresServer(tcp: true)
    defer { postgres.destroy() }
    let catalog = try SyncFixture.writeCatalog(in: postgres.directory)
    let phone = try Device("phone", url: try #require(postgres.tcpURL), catalog: catalog)
    let tablet = try Device("tablet", url: postgres.url, catalog: catalog)
    let lost = try Device("lost", url: "postgresql://postgres@tipsd-test.invalid/postgres", catalog: catalog)
    defer { for device in [phone, tablet, lost] { device.destroy() } }
    try phone.call("events/donate", ["id": "e1"])
    try waitUntilConverged([phone, tablet], postgres: postgres)
    #expect(try tablet.call("events/donate", ["id": "e1"])["lifetime"] == 2)
    #expect(
      waitUntil(timeout: testTimeout * 3) {
        (try? lost.syncStatus()["lastError"]?.stringValue)??.contains("tipsd-test.invalid") == true
      })
  }

  /// A datastore belongs to one account and one device: the device id is made once and kept; another account or
  /// another --device on the same datastore is refused at start.
  @Test func datastoreKeepsItsAccountAndDevice() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let datastore = "\(directory)/d.sqlite"
    func start(_ extra: [String]) throws -> Daemon {
      try Daemon(["--sync", postgres.url, "--log-level", "debug"] + extra, directory: directory, datastore: datastore)
    }
    var daemon = try start(["--account", "alice"])
    let first = try daemon.connect()
    try first.initialize()
    let device = try #require(try first.result("sync/status")["device"]?.stringValue)
    #expect(device.count == 32)
    first.close()
    daemon.stop(removeDirectory: false)

    daemon = try start(["--account", "alice"])
    let second = try daemon.connect()
    try second.initialize()
    #expect(try second.result("sync/status")["device"]?.stringValue == device)
    second.close()
    daemon.stop(removeDirectory: false)

    for (extra, message) in [
      (["--account", "bob"], "cannot sync account"), (["--account", "alice", "--device", "other"], "cannot be device"),
    ] {
      let refused = Process()
      refused.executableURL = URL(fileURLWithPath: tipsdBinary())
      refused.arguments = ["serve", "--stdio", "--datastore", datastore, "--sync", postgres.url] + extra
      let errors = Pipe()
      refused.standardError = errors
      refused.standardInput = FileHandle.nullDevice
      try refused.run()
      let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      refused.waitUntilExit()
      #expect(refused.terminationStatus == 1)
      #expect(text.contains(message), "\(text)")
    }
  }
}
