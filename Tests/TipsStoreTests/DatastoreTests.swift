import Foundation
import Testing
import TipsEngine
import TipsJSON

@testable import TipsStore

/// Writes exercising every kind of durable state, and the snapshot they must load as.
func sampleWrites() -> (writes: [StateWrite], expected: EngineSnapshot) {
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
    // Trimmed donations still count in the lifetime count (kept + dropped).
    .donation(eventID: "trimmed", donation(1), keepNewest: 1),
    .donation(eventID: "trimmed", donation(2), keepNewest: 1),
    .donation(eventID: "trimmed", donation(3), keepNewest: 1),
    .variantAssignment(tipID: "filter.tip", variant: "friendly"),
    .variantAssignment(tipID: "gone.tip", variant: "a"),
    .variantAssignment(tipID: "gone.tip", variant: nil),
    .variantAssignment(tipID: "filter.tip", variant: "direct"),
    .installID("install-1"),
    .installID("install-2"),
    // Beyond TipKit (schema 10): donation ages and what they trim, the suppression, holdout exposures.
    .donationMaxAge(eventID: "search.opened", seconds: 86_400),
    .donationMaxAge(eventID: "trail.visited", seconds: 600),
    .donationMaxAge(eventID: "trail.visited", seconds: nil),
    .donation(eventID: "aged", donation(1), keepNewest: 1000),
    .donation(eventID: "aged", donation(2), keepNewest: 1000),
    .donation(eventID: "aged", donation(3), keepNewest: 1000),
    .trimDonations(eventID: "aged", keepNewest: 1),
    .suppression(Suppression(since: 10, until: 20, reason: "checkout")),
    .suppression(Suppression(since: 30)),
    .exposure(tipID: "filter.tip", variant: "control", since: 5),
    .exposure(tipID: "other.tip", variant: "hold", since: 6),
    .exposure(tipID: "other.tip", variant: "hold", since: nil),
  ]
  let expected = EngineSnapshot(
    donations: [
      "search.opened": [donation(1_700_000_000), donation(1_700_000_002, search2)],
      "trail.visited": [donation(1_700_000_001.5, trail1), donation(1_700_000_003.25, trail2)],
      "": [donation(-5, [:])],
      "trimmed": [donation(3)],
      "aged": [donation(3)],
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
    donationLimits: ["trail.visited": 5, "no.donations.yet": 0],
    lifetimeCounts: ["trimmed": 3, "aged": 3],
    variantAssignments: ["filter.tip": "direct"],
    installID: "install-2",
    donationMaxAges: ["search.opened": 86_400],
    suppression: Suppression(since: 30),
    exposures: ["filter.tip\u{1F}control": 5]
  )
  return (writes, expected)
}

/// The donation instants of `event` in a snapshot.
func instants(_ snapshot: EngineSnapshot, _ event: String) -> [Timestamp] {
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

  @Test("a batch's donations of one event are one row; bounding writes nothing; dead chunks go in batches")
  func packedChunks() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    func rows(_ store: Datastore) throws -> Int64? {
      try store.openConnection().scalarInt("SELECT count(*) FROM donation_chunks")
    }
    do {
      let store = try Datastore(path: path)
      try store.commit((0..<64).map { .donation(eventID: "e", donation(Double($0)), keepNewest: 100) })
      #expect(try rows(store) == 1)
      // 128 > 100: the first chunk straddles the bound; its oldest 28 are dropped (numbered below the second
      // chunk's first_visible), and no row is updated or deleted.
      try store.commit((64..<128).map { .donation(eventID: "e", donation(Double($0)), keepNewest: 100) })
      #expect(try rows(store) == 2)
      var snapshot = try store.load()
      #expect(instants(snapshot, "e") == (28..<128).map(Double.init))
      #expect(snapshot.lifetimeCounts["e"] == 128)
      // One donation per commit, 200 times: dead chunks pile up to 32, then go together.
      for k in 128..<328 {
        try store.commit([.donation(eventID: "e", donation(Double(k)), keepNewest: 100)])
        #expect(try rows(store)! <= 100 + 32 + 1)
      }
      snapshot = try store.load()
      #expect(instants(snapshot, "e") == (228..<328).map(Double.init))
      #expect(snapshot.lifetimeCounts["e"] == 328)
      // A lower limit drops at once without a chunk; a higher one later does not bring anything back.
      try store.commit([.donationLimit(eventID: "e", limit: 10)])
      #expect(instants(try store.load(), "e") == (318..<328).map(Double.init))
      store.close()
    }
    // The numbers survive a reopen, and writes before any load continue from them.
    let store = try Datastore(path: path)
    try store.commit([.donation(eventID: "e", donation(328), keepNewest: 100)])
    let snapshot = try store.load()
    #expect(instants(snapshot, "e") == (318..<329).map(Double.init))
    #expect(snapshot.lifetimeCounts["e"] == 329)
  }

  @Test(
    "one batch interleaving events, rewriting one of them midway and donating to it again, keeps every donation in order"
  )
  func interleavedBatch() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    let store = try Datastore(path: path)
    try store.commit([.donation(eventID: "a", donation(1), keepNewest: 3)])
    try store.commit([
      .donation(eventID: "a", donation(2), keepNewest: 3),
      .donation(eventID: "b", donation(10), keepNewest: 100),
      .donation(eventID: "a", donation(3), keepNewest: 3),
      .donation(eventID: "c", donation(20), keepNewest: 100),
      .donation(eventID: "b", donation(11), keepNewest: 100),
      .donation(eventID: "b", donation(12), keepNewest: 100),
      // "b" rewritten whole (a merge from another device): its pending donations are in the list.
      .donations(eventID: "b", [donation(9), donation(10), donation(11), donation(12)], lifetime: 7),
      .donation(eventID: "b", donation(13), keepNewest: 100),
      .donation(eventID: "a", donation(4), keepNewest: 3),
      .donation(eventID: "c", donation(21), keepNewest: 100),
      .donation(eventID: "b", donation(14), keepNewest: 100),
    ])
    let loaded = try store.load()
    store.close()
    for snapshot in [loaded, try Datastore(path: path).load()] {
      #expect(instants(snapshot, "a") == [2, 3, 4])
      #expect(instants(snapshot, "b") == [9, 10, 11, 12, 13, 14])
      #expect(instants(snapshot, "c") == [20, 21])
      // Lifetime counts are kept where they exceed what is kept.
      #expect(snapshot.lifetimeCounts == ["a": 4, "b": 9])
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
      #expect(
        try store.load()
          == EngineSnapshot(
            donations: ["search.opened": [donation(2), donation(3)]], lifetimeCounts: ["search.opened": 3]))
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
      #expect(throws: SQLiteError.self) { _ = try side.scalarText("SELECT count(*) FROM donation_chunks") }
      side.close()
      store.close()
    }
    let side = try SQLiteConnection(path: path)
    #expect(try side.scalarText("SELECT count(*) FROM donation_chunks") == "1")
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

}

/// The `sqlite_schema` rows (type, name, SQL) of the database at `path`, sorted.
func schema(of path: String) throws -> [String] {
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
