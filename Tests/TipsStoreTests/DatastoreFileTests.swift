import Foundation
import Testing
import TipsEngine
import TipsJSON

@testable import TipsStore

@Suite("Datastore files: corruption, migration, locking, paths")
struct DatastoreFileTests {
  @Test("damaged content (a malformed donation chunk) is refused as corruption, and recover moves it aside")
  func damagedContentRefused() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    try Datastore(path: path).commit([.donation(eventID: "e", donation(1, ["k": 1]), keepNewest: 10)])
    let side = try SQLiteConnection(path: path)
    try side.execute("UPDATE donation_chunks SET data = X'00' ; PRAGMA wal_checkpoint(TRUNCATE);")
    side.close()
    let before = contents(of: path)

    let error = #expect(throws: DatastoreError.self) { try Datastore(path: path) }
    #expect(error?.isCorruption == true)
    #expect(error?.message.contains("event e") == true)
    #expect(error?.message.contains(path) == true)
    #expect(contents(of: path) == before)

    let store = try Datastore(path: path, options: DatastoreOptions(recover: true))
    #expect(store.recoveredFrom != nil)
    #expect(try store.load() == EngineSnapshot())
  }

  @Test("unparsable associated values inside a chunk are refused as corruption, naming the event")
  func damagedInfoRefused() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    try Datastore(path: path).commit([.donation(eventID: "e", donation(1, ["k": 1]), keepNewest: 10)])
    let side = try SQLiteConnection(path: path)
    // One donation at 1.0 whose 6 bytes of JSON stop short: `{"k": `.
    try side.execute(
      "UPDATE donation_chunks SET data = X'000000000000F03F06' || CAST('{\"k\": ' AS BLOB); PRAGMA wal_checkpoint(TRUNCATE);"
    )
    side.close()
    let error = #expect(throws: DatastoreError.self) { try Datastore(path: path) }
    #expect(error?.isCorruption == true)
    #expect(error?.message.contains("event e") == true)
  }

  @Test("a v1 fixture migrates to the current schema, keeping its data")
  func migrationFromVersion1() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let fixture = "\(fixturesDirectory)/v1.sqlite"
    let path = directory.file("v1.sqlite")
    try FileManager.default.copyItem(atPath: fixture, toPath: path)
    let pristine = contents(of: fixture)

    let expected = EngineSnapshot(
      donations: [
        "search.opened": [
          donation(1_700_000_000), donation(1_700_000_020), donation(1_700_000_040, ["query": "café \"latte\""]),
        ],
        "trail.visited": [
          donation(1_700_000_010.5, ["region": "north", "difficulty": 3]),
          donation(1_700_000_030.25, ["region": "south", "difficulty": 1]),
          donation(1_700_000_050, ["region": "north", "difficulty": 2.5, "paved": false]),
        ],
      ],
      parameters: ["isLoggedIn": true, "plan": "pro", "visits": 42, "ratio": 0.75],
      tipRecords: [
        "filter.tip": TipRecord(
          invalidationReason: .tipClosed, invalidatedAt: 1_700_000_100, displayCount: 2, displayedDuration: 12.5),
        "search.tip": TipRecord(displayCount: 3, displayedDuration: 7),
        "trail.tip": TipRecord(
          invalidationReason: .displayCountExceeded, invalidatedAt: 1_700_000_200, displayCount: 5,
          displayedDuration: 30),
      ],
      cooldownStartedAt: 1_700_000_090,
      displayFrequency: .daily
    )
    do {
      let store = try Datastore(path: path)
      #expect(store.schemaVersion == Datastore.currentSchemaVersion)
      #expect(try store.load() == expected)
      // Counts of migrated events are right: bounding to 2 drops exactly the oldest two.
      try store.commit([.donation(eventID: "search.opened", donation(1_700_000_060), keepNewest: 2)])
      #expect(instants(try store.load(), "search.opened") == [1_700_000_040, 1_700_000_060])
    }
    let store = try Datastore(path: path)
    #expect(instants(try store.load(), "search.opened") == [1_700_000_040, 1_700_000_060])
    #expect(try store.load().donations["trail.visited"] == expected.donations["trail.visited"])
    store.close()
    #expect(contents(of: fixture) == pristine)

    // The migrated schema is exactly a fresh datastore's.
    let fresh = directory.file("fresh.sqlite")
    try Datastore(path: fresh).close()
    #expect(try schema(of: path) == schema(of: fresh))
    #expect(try schema(of: path).contains { $0.contains("first_displayed_at") })
  }

  @Test(
    "a schema 9 file migrates to 10: donation limits keep their counts and may gain ages; exposures and the suppression persist"
  )
  func migrationFromVersion9() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("v9.sqlite")
    do {
      let side = try SQLiteConnection(path: path)
      try createDatastore(side, version: 9)
      try side.execute("INSERT INTO donation_limits (event, max_count) VALUES ('trail.visited', 5), ('e', 1)")
      side.close()
    }
    do {
      let store = try Datastore(path: path)
      #expect(store.schemaVersion == Datastore.currentSchemaVersion)
      #expect(try store.load() == EngineSnapshot(donationLimits: ["trail.visited": 5, "e": 1]))
      try store.commit([
        .donationMaxAge(eventID: "trail.visited", seconds: 3_600), .donationMaxAge(eventID: "only.age", seconds: 60),
        .exposure(tipID: "filter.tip", variant: "control", since: 7),
        .suppression(Suppression(since: 1, until: 2, reason: "call")),
      ])
      store.close()
    }
    let store = try Datastore(path: path)
    #expect(
      try store.load()
        == EngineSnapshot(
          donationLimits: ["trail.visited": 5, "e": 1], donationMaxAges: ["trail.visited": 3_600, "only.age": 60],
          suppression: Suppression(since: 1, until: 2, reason: "call"), exposures: ["filter.tip\u{1F}control": 7]))
    store.close()
    // The migrated schema is exactly a fresh datastore's.
    let fresh = directory.file("fresh.sqlite")
    try Datastore(path: fresh).close()
    #expect(try schema(of: path) == schema(of: fresh))
  }

  @Test("a datastore from a newer tipsd is refused and left untouched, even with recover")
  func newerVersionRefused() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    try Datastore(path: path).commit([.parameter(id: "p", value: 1)])
    let side = try SQLiteConnection(path: path)
    try side.execute("UPDATE schema_version SET version = 99")
    side.close()
    let before = contents(of: path)

    for recover in [false, true] {
      let error = #expect(throws: DatastoreError.self) {
        try Datastore(path: path, options: DatastoreOptions(recover: recover))
      }
      #expect(error?.message.contains(path) == true)
      #expect(error?.message.contains("schema version 99") == true)
      #expect(error?.message.contains("newer") == true)
    }
    #expect(contents(of: path) == before)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.contains("corrupt") })
  }

  @Test("a SQLite database that is not a datastore is refused")
  func foreignDatabaseRefused() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("other.sqlite")
    let side = try SQLiteConnection(path: path)
    try side.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY); INSERT INTO photos VALUES (1);")
    side.close()
    let before = contents(of: path)
    let error = #expect(throws: DatastoreError.self) { try Datastore(path: path) }
    #expect(error?.message.contains("not a tipsd datastore") == true)
    #expect(error?.message.contains(path) == true)
    #expect(contents(of: path) == before)
  }

  @Test("a second open of a datastore is refused while the first holds it")
  func lockRefusal() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    let first = try Datastore(path: path)
    try first.commit([.parameter(id: "owner", value: "first")])

    let error = #expect(throws: DatastoreError.self) { try Datastore(path: path) }
    #expect(
      error?.message == "another tipsd is using the datastore \(path) (lock \(path).lock held by pid \(getpid()))")
    #expect(error?.path == path)
    #expect(try first.load().parameters == ["owner": "first"])  // the refused open disturbed nothing

    first.close()
    let second = try Datastore(path: path)
    #expect(try second.load().parameters == ["owner": "first"])
  }

  @Test("a garbage file is refused with SQLite's message and left untouched")
  func garbageRefused() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    try garbage.write(to: URL(fileURLWithPath: path))

    let error = #expect(throws: DatastoreError.self) { try Datastore(path: path) }
    #expect(error?.message.contains(path) == true)
    #expect(error?.message.contains("file is not a database") == true)
    #expect(error?.message.contains("--datastore-recover") == true)
    #expect(error?.sqliteCode == 26)
    #expect(error?.isCorruption == true)
    #expect(contents(of: path) == garbage)
    #expect(!fileExists(path + "-wal"))

    // The refused open released the lock: a recovering open can proceed.
    let store = try Datastore(path: path, options: DatastoreOptions(recover: true))
    let movedTo = try #require(store.recoveredFrom)
    #expect(movedTo.hasPrefix(path + ".corrupt-"))
    #expect(movedTo.count == (path + ".corrupt-").count + "YYYYMMDDTHHMMSSZ".count)
    #expect(contents(of: movedTo) == garbage)
    #expect(try store.load() == EngineSnapshot())
    try store.commit([.parameter(id: "fresh", value: true)])
    store.close()
    let reopened = try Datastore(path: path)
    #expect(reopened.recoveredFrom == nil)
    #expect(try reopened.load().parameters == ["fresh": true])
  }

  @Test("a truncated file is refused and left untouched; recover moves it and its WAL aside")
  func truncatedRefused() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    do {
      let store = try Datastore(path: path)
      let batch: [StateWrite] = (0..<4000).map {
        .donation(
          eventID: "e\($0 % 4)", donation(Double($0), ["n": .int(Int64($0)), "pad": "padding text"]), keepNewest: 1000)
      }
      try store.commit(batch)
    }
    let whole = contents(of: path)
    #expect(whole.count > 32 * 1024)
    let truncated = whole.prefix(whole.count / 2)
    try truncated.write(to: URL(fileURLWithPath: path))

    let error = #expect(throws: DatastoreError.self) { try Datastore(path: path) }
    #expect(error?.message.contains(path) == true)
    #expect(error?.message.contains("malformed") == true)
    #expect(error?.isCorruption == true)
    #expect(contents(of: path) == truncated)

    // A stale WAL beside the damaged file goes aside with it.
    try Data("stale wal".utf8).write(to: URL(fileURLWithPath: path + "-wal"))
    let store = try Datastore(path: path, options: DatastoreOptions(recover: true))
    let movedTo = try #require(store.recoveredFrom)
    #expect(contents(of: movedTo) == truncated)
    #expect(contents(of: movedTo + "-wal") == Data("stale wal".utf8))
    #expect(try store.load() == EngineSnapshot())
  }

  @Test("a zero-length file holds nothing and is initialized")
  func emptyFile() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    let store = try Datastore(path: path)
    #expect(store.recoveredFrom == nil)
    #expect(try store.load() == EngineSnapshot())
  }

  @Test("missing parent directories are created with mode 0700")
  func parentDirectories() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("a/b/c/store.sqlite")
    let store = try Datastore(path: path)
    try store.commit([.cooldown(1)])
    for sub in ["a", "a/b", "a/b/c"] {
      let attributes = try FileManager.default.attributesOfItem(atPath: directory.file(sub))
      #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
    }
    #expect(fileExists(path + ".lock"))
    #expect(String(decoding: contents(of: path + ".lock"), as: UTF8.self) == "\(getpid())\n")
  }

  @Test(":memory: datastores are private and unlocked")
  func memory() throws {
    let first = try Datastore(path: ":memory:")
    let second = try Datastore(path: ":memory:")
    try first.commit([.parameter(id: "p", value: 1)])
    #expect(try first.load().parameters == ["p": 1])
    #expect(try second.load() == EngineSnapshot())
    #expect(!fileExists(":memory:.lock"))
  }

  @Test("synchronous is NORMAL by default and FULL with fsync; the journal is a WAL")
  func pragmas() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    for (fsync, expected) in [(false, "1"), (true, "2")] {
      let path = directory.file("store-\(fsync).sqlite")
      let store = try Datastore(path: path, options: DatastoreOptions(fsync: fsync))
      #expect(try store.pragma("synchronous") == expected)
      #expect(try store.pragma("journal_mode") == "wal")
    }
  }

  @Test("use after close fails with a clear message")
  func useAfterClose() throws {
    let store = try Datastore(path: ":memory:")
    store.close()
    store.close()
    let error = #expect(throws: DatastoreError.self) { try store.commit([.cooldown(1)]) }
    #expect(error?.message == "the datastore :memory: is closed")
    #expect(throws: DatastoreError.self) { try store.load() }
  }

  @Test("defaultPath follows XDG_DATA_HOME, else HOME")
  func defaultPath() {
    #expect(
      Datastore.defaultPath(environment: ["XDG_DATA_HOME": "/xdg/data", "HOME": "/home/u"])
        == "/xdg/data/tipsd/default.sqlite")
    #expect(
      Datastore.defaultPath(name: "work", environment: ["XDG_DATA_HOME": "/xdg/data/", "HOME": "/home/u"])
        == "/xdg/data/tipsd/work.sqlite")
    #expect(Datastore.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.local/share/tipsd/default.sqlite")
    // A relative XDG_DATA_HOME is invalid per the XDG spec and ignored.
    #expect(
      Datastore.defaultPath(environment: ["XDG_DATA_HOME": "rel", "HOME": "/home/u"])
        == "/home/u/.local/share/tipsd/default.sqlite")
    #expect(
      Datastore.defaultPath(environment: ["XDG_DATA_HOME": "", "HOME": "/home/u/"])
        == "/home/u/.local/share/tipsd/default.sqlite")
    #expect(Datastore.defaultPath(environment: [:]).hasSuffix("/.local/share/tipsd/default.sqlite"))
  }
}
