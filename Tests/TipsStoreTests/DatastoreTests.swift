import Foundation
import Testing
import TipsEngine
import TipsJSON

@testable import TipsStore

/// Writes exercising every kind of durable state, and the snapshot they must load as.
private func sampleWrites() -> (writes: [StateWrite], expected: EngineSnapshot) {
  let trail1: JSONObject = ["region": "north", "difficulty": 3]
  let search2: JSONObject = ["query": "café \"latte\"\n\\", "emoji": "🧭", "unicode": "\u{0001}"]
  let trail2: JSONObject = ["region": "south", "ok": true, "none": nil, "ratio": 2.25, "big": .int(Int64.max)]
  let writes: [StateWrite] = [
    .donation(eventID: "search.opened", donation(1_700_000_000), keepNewest: 1000),
    .donation(eventID: "trail.visited", donation(1_700_000_001.5, trail1), keepNewest: 1000),
    .donation(eventID: "search.opened", donation(1_700_000_002, search2), keepNewest: 1000),
    .donation(eventID: "trail.visited", donation(1_700_000_003.25, trail2), keepNewest: 1000),
    .donation(eventID: "", donation(-5, [:]), keepNewest: 1000),
    .parameter(id: "isLoggedIn", value: false),
    .parameter(id: "isLoggedIn", value: true),
    .parameter(id: "plan", value: "pro"),
    .parameter(id: "visits", value: 42),
    .parameter(id: "ratio", value: 0.75),
    .parameter(id: "gone", value: "soon"),
    .deleteParameter(id: "gone"),
    .deleteParameter(id: "never.set"),
    .tipRecord(
      id: "filter.tip",
      TipRecord(
        invalidationReason: .tipClosed, invalidatedAt: 1_700_000_100, displayCount: 2, displayedDuration: 12.5,
        firstDisplayedAt: 1_700_000_050, lastDisplayedAt: 1_700_000_090)),
    .tipRecord(
      id: "search.tip", TipRecord(displayCount: 1, displayedDuration: 3, firstDisplayedAt: 10, lastDisplayedAt: 10)),
    .tipRecord(
      id: "search.tip", TipRecord(displayCount: 2, displayedDuration: 5, firstDisplayedAt: 10, lastDisplayedAt: 20)),
    .tipRecord(id: "empty.tip", TipRecord(displayCount: 1)),
    .tipRecord(id: "empty.tip", TipRecord()),
    .tipRecord(
      id: "budget.tip", TipRecord(invalidationReason: .displayDurationExceeded, invalidatedAt: 7, displayedDuration: 60)
    ),
    .cooldown(1_700_000_090),
    .displayFrequency(.weekly),
    .donationLimit(eventID: "trail.visited", limit: 5),
    .donationLimit(eventID: "no.donations.yet", limit: 0),
  ]
  let expected = EngineSnapshot(
    donations: [
      "search.opened": [donation(1_700_000_000), donation(1_700_000_002, search2)],
      "trail.visited": [donation(1_700_000_001.5, trail1), donation(1_700_000_003.25, trail2)],
      "": [donation(-5, [:])],
    ],
    parameters: ["isLoggedIn": true, "plan": "pro", "visits": 42, "ratio": 0.75],
    tipRecords: [
      "filter.tip": TipRecord(
        invalidationReason: .tipClosed, invalidatedAt: 1_700_000_100, displayCount: 2, displayedDuration: 12.5,
        firstDisplayedAt: 1_700_000_050, lastDisplayedAt: 1_700_000_090),
      "search.tip": TipRecord(displayCount: 2, displayedDuration: 5, firstDisplayedAt: 10, lastDisplayedAt: 20),
      "budget.tip": TipRecord(invalidationReason: .displayDurationExceeded, invalidatedAt: 7, displayedDuration: 60),
    ],
    cooldownStartedAt: 1_700_000_090,
    displayFrequency: .weekly,
    donationLimits: ["trail.visited": 5, "no.donations.yet": 0]
  )
  return (writes, expected)
}

/// The donation instants of `event` in a snapshot.
private func instants(_ snapshot: EngineSnapshot, _ event: String) -> [Timestamp] {
  (snapshot.donations[event] ?? []).map(\.at)
}

@Suite("Datastore")
struct DatastoreTests {
  @Test("state round-trips through close and reopen")
  func roundTrip() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let (writes, expected) = sampleWrites()

    // All in one batch.
    let path = directory.file("one.sqlite")
    do {
      let store = try Datastore(path: path)
      #expect(store.schemaVersion == Datastore.currentSchemaVersion)
      #expect(try store.load() == EngineSnapshot())
      try store.commit(writes)
      #expect(try store.load() == expected)
      store.close()
    }
    let reopened = try Datastore(path: path)
    #expect(try reopened.load() == expected)
    reopened.close()

    // One batch per write, without closing cleanly (no checkpoint: the state comes from the WAL).
    let path2 = directory.file("many.sqlite")
    do {
      let store = try Datastore(path: path2)
      for write in writes { try store.commit([write]) }
      #expect(try store.load() == expected)
      store.close()
    }
    let reopened2 = try Datastore(path: path2)
    #expect(try reopened2.load() == expected)
  }

  @Test("cooldown and frequency can be cleared; an empty batch is a no-op")
  func clearing() throws {
    let store = try Datastore(path: ":memory:")
    try store.commit([.cooldown(5), .displayFrequency(.monthly)])
    #expect(try store.load().cooldownStartedAt == 5)
    #expect(try store.load().displayFrequency == .monthly)
    try store.commit([.cooldown(nil), .displayFrequency(.immediate)])
    try store.commit([])
    #expect(try store.load() == EngineSnapshot())
  }

  @Test("a deleted parameter (one that became transient) is not restored")
  func deletedParameter() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    do {
      let store = try Datastore(path: path)
      try store.commit([.parameter(id: "sessionFlag", value: true), .parameter(id: "kept", value: 1)])
      try store.commit([.deleteParameter(id: "sessionFlag")])
    }
    let store = try Datastore(path: path)
    #expect(try store.load().parameters == ["kept": 1])
  }

  @Test("donation history is bounded per event")
  func historyBounding() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    do {
      let store = try Datastore(path: path)
      // 25 donations of "a" in batches of varying size, keeping 10; 3 of "b".
      var k = 0
      for size in [1, 7, 3, 14] {
        var batch: [StateWrite] = []
        for _ in 0..<size {
          batch.append(.donation(eventID: "a", donation(Double(k), ["k": .int(Int64(k))]), keepNewest: 10))
          k += 1
        }
        try store.commit(batch)
      }
      try store.commit((0..<3).map { .donation(eventID: "b", donation(Double(100 + $0)), keepNewest: 10) })
      var snapshot = try store.load()
      #expect(instants(snapshot, "a") == (15..<25).map(Double.init))
      #expect(snapshot.donations["a"]?.last?.info == ["k": 24])
      #expect(instants(snapshot, "b") == [100, 101, 102])

      // A lower limit trims at once; the other event is untouched.
      try store.commit([.donationLimit(eventID: "a", limit: 4)])
      snapshot = try store.load()
      #expect(instants(snapshot, "a") == [21, 22, 23, 24])
      #expect(snapshot.donationLimits == ["a": 4])
      #expect(instants(snapshot, "b") == [100, 101, 102])

      // keepNewest 0 keeps nothing.
      try store.commit([.donation(eventID: "c", donation(1), keepNewest: 0)])
      #expect(try store.load().donations["c"] == nil)
      store.close()
    }
    // After a reopen, writes come before any load: counts are rebuilt from the file.
    do {
      let store = try Datastore(path: path)
      try store.commit([.donation(eventID: "a", donation(25), keepNewest: 4)])
      try store.commit([.donation(eventID: "a", donation(26), keepNewest: 6)])  // a higher bound keeps more
      let snapshot = try store.load()
      #expect(instants(snapshot, "a") == [22, 23, 24, 25, 26])
      #expect(instants(snapshot, "b") == [100, 101, 102])
      #expect(snapshot.donationLimits == ["a": 4])
    }
  }

  @Test("trimming 1000-donation histories deletes exactly the oldest")
  func largeBounding() throws {
    let store = try Datastore(path: ":memory:")
    var batch: [StateWrite] = []
    for k in 0..<3000 {
      batch.append(.donation(eventID: "e\(k % 3)", donation(Double(k)), keepNewest: 700))
    }
    try store.commit(batch)
    let snapshot = try store.load()
    for e in 0..<3 {
      #expect(instants(snapshot, "e\(e)") == stride(from: 3000 - 700 * 3 + e, to: 3000, by: 3).map(Double.init))
    }
  }

  @Test("reset clears every table in the batch's transaction")
  func reset() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    do {
      let store = try Datastore(path: path)
      try store.commit(sampleWrites().writes)
      try store.commit([
        .reset,
        .donation(eventID: "search.opened", donation(1), keepNewest: 2),
        .donation(eventID: "search.opened", donation(2), keepNewest: 2),
        .donation(eventID: "search.opened", donation(3), keepNewest: 2),
      ])
      #expect(try store.load() == EngineSnapshot(donations: ["search.opened": [donation(2), donation(3)]]))
      try store.commit([.reset])
      #expect(try store.load() == EngineSnapshot())
      try store.commit([.donation(eventID: "x", donation(9), keepNewest: 5)])
    }
    let store = try Datastore(path: path)
    #expect(try store.load() == EngineSnapshot(donations: ["x": [donation(9)]]))
  }

  @Test("by default the store holds SQLite's locks: no other connection reads the file while it is open")
  func exclusiveLocking() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    do {
      let store = try Datastore(path: path)
      try store.commit([.donation(eventID: "a", donation(1), keepNewest: 5)])
      let side = try SQLiteConnection(path: path)
      #expect(throws: SQLiteError.self) { _ = try side.scalarText("SELECT count(*) FROM donations") }
      side.close()
      store.close()
    }
    let side = try SQLiteConnection(path: path)
    #expect(try side.scalarText("SELECT count(*) FROM donations") == "1")
    side.close()
  }

  @Test("a failed batch keeps nothing, and later batches still bound history exactly")
  func failedBatchRollsBack() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    // Shared locking, so that a second connection can sabotage the file.
    let store = try Datastore(path: path, options: DatastoreOptions(exclusiveLocking: false))
    try store.commit((0..<5).map { .donation(eventID: "a", donation(Double($0)), keepNewest: 5) })

    // Sabotage a table behind the store's back so that the batch fails at its last write.
    let side = try SQLiteConnection(path: path)
    try side.execute("ALTER TABLE tip_records RENAME TO tip_records_away")
    #expect(throws: DatastoreError.self) {
      try store.commit([
        .donation(eventID: "a", donation(5), keepNewest: 5),
        .donation(eventID: "new", donation(6), keepNewest: 5),
        .tipRecord(id: "t", TipRecord(displayCount: 1)),
      ])
    }
    try side.execute("ALTER TABLE tip_records_away RENAME TO tip_records")
    side.close()

    // The next batch comes before any load: the store rebuilds its per-event row ids from the file.
    try store.commit([
      .donation(eventID: "a", donation(7), keepNewest: 5), .donation(eventID: "new", donation(8), keepNewest: 5),
    ])
    let snapshot = try store.load()
    #expect(instants(snapshot, "a") == [1, 2, 3, 4, 7])
    #expect(instants(snapshot, "new") == [8])
    #expect(snapshot.tipRecords.isEmpty)
  }

  @Test("damaged content (unparsable stored JSON) is refused as corruption, and recover moves it aside")
  func damagedContentRefused() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    try Datastore(path: path).commit([.donation(eventID: "e", donation(1, ["k": 1]), keepNewest: 10)])
    let side = try SQLiteConnection(path: path)
    try side.execute("UPDATE donations SET info = '{\"k\": ' ; PRAGMA wal_checkpoint(TRUNCATE);")
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

/// The `sqlite_schema` rows (type, name, SQL) of the database at `path`, sorted.
private func schema(of path: String) throws -> [String] {
  let connection = try SQLiteConnection(path: path)
  defer { connection.close() }
  let statement = try connection.prepareUncached("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name")
  var rows: [String] = []
  while try statement.step() {
    rows.append((0..<4).map { statement.text(Int32($0)) ?? "NULL" }.joined(separator: " | "))
  }
  return rows
}

extension Datastore {
  /// A pragma's value on the store's own connection (tests only).
  func pragma(_ name: String) throws -> String? {
    try connection?.scalarText("PRAGMA \(name)")
  }
}
