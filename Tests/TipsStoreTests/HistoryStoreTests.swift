import Foundation
import Testing
import TipsEngine
import TipsJSON

@testable import TipsStore

private func entries(from first: Int64, _ kinds: [HistoryEvent.Kind], at: Double = 100) -> [HistoryEvent] {
  kinds.enumerated().map { offset, kind in
    let cursor = first + Int64(offset)
    switch kind {
    case .impression:
      return HistoryEvent(cursor: cursor, kind: kind, at: at + Double(offset), tipID: "t", duration: 2.5)
    case .action:
      return HistoryEvent(
        cursor: cursor, kind: kind, at: at + Double(offset), tipID: "t", variant: "b", actionID: "go", actionIndex: 1)
    case .donation: return HistoryEvent(cursor: cursor, kind: kind, at: at + Double(offset), eventID: "filter.used")
    case .eligibility:
      return HistoryEvent(
        cursor: cursor, kind: kind, at: at + Double(offset), tipID: "t", variant: "b", reason: "tipClosed",
        status: "invalidated", shouldDisplay: false)
    case .invalidation:
      return HistoryEvent(cursor: cursor, kind: kind, at: at + Double(offset), tipID: "t", reason: "tipClosed")
    case .variant: return HistoryEvent(cursor: cursor, kind: kind, at: at + Double(offset), tipID: "t", variant: "b")
    case .exposure:
      return HistoryEvent(cursor: cursor, kind: kind, at: at + Double(offset), tipID: "t", variant: "hold")
    }
  }
}

extension Datastore {
  /// The rows `sql` reads from the file, each of its `columns` as a number.
  fileprivate func rows(_ sql: String, columns: Int32 = 1) throws -> [[Double]] {
    let statement = try openConnection().prepareUncached(sql)
    var rows: [[Double]] = []
    while try statement.step() { rows.append((0..<columns).map { statement.double($0) }) }
    return rows
  }
}

@Suite("Datastore: the lifecycle history")
struct HistoryStoreTests {
  @Test("history entries commit with the batch's writes and read back field for field, donations aside")
  func roundTrip() throws {
    let store = try Datastore(path: ":memory:")
    let written = entries(from: 1, [.variant, .impression, .eligibility, .donation, .action, .invalidation, .exposure])
    try store.commit([.parameter(id: "p", value: 1)], history: written)
    let streamed = try store.history(after: 0, limit: 100)
    #expect(streamed == written.filter { $0.kind != .donation })
    #expect(try store.history(after: 3, limit: 1).map(\.cursor) == [5])
    #expect(try store.historyForMetrics().map(\.kind) == [.impression, .eligibility, .donation, .action, .exposure])
    #expect(try store.historyBounds() == HistoryBounds(oldestCursor: 1, newestCursor: 7, oldestAt: 100))
    let state = try store.historyState()
    #expect(state.lastCursor == 7)
    #expect(
      state.tips == [
        "t": RecordedTipState(status: "invalidated", reason: "tipClosed", shouldDisplay: false, variant: "b")
      ])
    #expect(try store.load().parameters == ["p": 1])
  }

  @Test("history alone is a batch; a failed batch keeps none of its history")
  func atomic() throws {
    let store = try Datastore(path: ":memory:", options: DatastoreOptions(maxPages: 40))
    try store.commit([], history: entries(from: 1, [.impression]))
    #expect(try store.historyState().lastCursor == 1)
    // A batch too large for the capped file fails as a full disk would: neither its writes nor its history stay.
    let big = JSONValue.string(String(repeating: "x", count: 400_000))
    #expect(throws: DatastoreError.self) {
      try store.commit([.parameter(id: "big", value: big)], history: entries(from: 2, [.impression, .action]))
    }
    #expect(try store.historyState().lastCursor == 1)
    #expect(try store.load().parameters.isEmpty)
  }

  @Test("a datastore reset leaves the history (and its cursors) alone")
  func resetKeepsHistory() throws {
    let store = try Datastore(path: ":memory:")
    try store.commit([.parameter(id: "p", value: 1)], history: entries(from: 1, [.impression, .eligibility]))
    try store.commit([.reset])
    #expect(try store.history(after: 0, limit: 10).count == 2)
    #expect(try store.historyState().tips["t"] != nil)
  }

  @Test("pruning deletes every entry older than the cutoff, the newest too and wherever it lies; cursors continue")
  func prune() throws {
    let store = try Datastore(path: ":memory:")
    // One commit each, so one chunk each, at 100, 101, 102, 103.
    for (offset, kind) in [HistoryEvent.Kind.impression, .impression, .donation, .impression].enumerated() {
      try store.commit([], history: entries(from: Int64(offset + 1), [kind], at: 100 + Double(offset)))
    }
    #expect(try store.pruneHistory(before: 102) == 2)
    #expect(try store.historyBounds() == HistoryBounds(oldestCursor: 4, newestCursor: 4, oldestAt: 102))
    #expect(try store.pruneHistory(before: 102) == 0)
    // An entry older than the one before it (the clock went back) goes at the same prune as the others.
    try store.commit([], history: [HistoryEvent(cursor: 5, kind: .impression, at: 50, tipID: "t")])
    #expect(try store.pruneHistory(before: 103) == 2)
    #expect(try store.history(after: 0, limit: 10).map(\.cursor) == [4])
    #expect(try store.historyForMetrics().map(\.cursor) == [4])
    // The newest entry goes too; its cursor is kept, and the next commit continues after it.
    #expect(try store.pruneHistory(before: 1_000) == 1)
    #expect(try store.historyBounds() == HistoryBounds(oldestCursor: nil, newestCursor: 5, oldestAt: nil))
    #expect(try store.historyState().lastCursor == 5)
    #expect(try store.rows("SELECT count(*) FROM history") == [[0]])
    try store.commit([], history: entries(from: 6, [.action], at: 2_000))
    #expect(try store.historyBounds() == HistoryBounds(oldestCursor: 6, newestCursor: 6, oldestAt: 2_000))
  }

  @Test("a chunk that spans the cutoff is written again with only its younger entries")
  func pruneWithinAChunk() throws {
    let store = try Datastore(path: ":memory:")
    // One commit: an eligibility change at 100, donations at 101...104, an impression at 90 (dated earlier).
    var batch = entries(from: 1, [.eligibility, .donation, .donation, .donation, .donation])
    batch.append(HistoryEvent(cursor: 6, kind: .impression, at: 90, tipID: "t", duration: 1))
    try store.commit([], history: batch)
    let tips = try store.historyState().tips
    #expect(try store.pruneHistory(before: 102.5) == 4)
    let kept = batch.filter { $0.at >= 102.5 }
    #expect(kept.map(\.cursor) == [4, 5])
    #expect(try store.historyForMetrics() == kept)
    #expect(try store.history(after: 0, limit: 10).isEmpty)
    #expect(try store.rows("SELECT id, last, first_at, last_at FROM history", columns: 4) == [[4, 5, 103, 104]])
    #expect(try store.historyBounds() == HistoryBounds(oldestCursor: nil, newestCursor: 6, oldestAt: 103))
    // The tips' last recorded eligibility is not history past the limit: a shorter retention keeps it.
    #expect(try store.historyState().tips == tips)
  }

  @Test(
    "deleting the history keeps nothing (the tips' last recorded eligibility neither) but the newest cursor, across a reopen"
  )
  func deleteEverything() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    do {
      let store = try Datastore(path: path)
      try store.commit([], history: entries(from: 1, [.variant, .eligibility, .impression], at: 5_000_000_000))
      #expect(try store.deleteHistory() == 3)
      #expect(try store.deleteHistory() == 0)
      #expect(try store.rows("SELECT count(*) FROM history") == [[0]])
      #expect(try store.rows("SELECT count(*) FROM history_tips") == [[0]])
      #expect(try store.rows("SELECT cursor FROM history_head") == [[3]])
      store.close()
    }
    let store = try Datastore(path: path)
    #expect(try store.historyState() == HistoryState(lastCursor: 3, tips: [:]))
    #expect(try store.historyBounds() == HistoryBounds(oldestCursor: nil, newestCursor: 3, oldestAt: nil))
    // A datastore reset leaves the kept cursor alone too.
    try store.commit([.reset])
    #expect(try store.historyState().lastCursor == 3)
  }

  @Test("a commit's entries are one chunk (of at most 256), its instants its oldest and newest; a chunk prunes whole")
  func chunks() throws {
    let store = try Datastore(path: ":memory:")
    var many: [HistoryEvent] = []
    for n in 1...600 {
      many.append(
        HistoryEvent(cursor: Int64(n), kind: .impression, at: 1_000 + Double(n), tipID: "t", duration: Double(n)))
    }
    try store.commit([], history: many)
    #expect(try store.history(after: 0, limit: 1000) == many)
    #expect(try store.history(after: 255, limit: 3).map(\.cursor) == [256, 257, 258])
    #expect(try store.history(after: 599, limit: 10).map(\.cursor) == [600])
    #expect(try store.history(after: 600, limit: 10).isEmpty)
    // Chunks of 256, 256 and 88: the first two hold only entries older than 1513.
    #expect(try store.pruneHistory(before: 1_513) == 512)
    #expect(try store.historyBounds() == HistoryBounds(oldestCursor: 513, newestCursor: 600, oldestAt: 1_513))
  }

  @Test("the chunk encoding round-trips every field and refuses damaged bytes")
  func codec() throws {
    let events =
      entries(from: 41, [.variant, .impression, .eligibility, .donation, .action, .invalidation])
      + [HistoryEvent(cursor: 50, kind: .eligibility, at: -1.5, tipID: "é 🧭", status: "available", shouldDisplay: true)]
    let bytes = HistoryCodec.encode(events[...])
    let decoded = bytes.withUnsafeBytes { HistoryCodec.decode($0, first: 41) }
    #expect(decoded == events)
    for cut in [1, 5, bytes.count - 1] {
      #expect(Array(bytes.prefix(cut)).withUnsafeBytes { HistoryCodec.decode($0, first: 41) } == nil)
    }
    var badKind = bytes
    badKind[0] = 99
    #expect(badKind.withUnsafeBytes { HistoryCodec.decode($0, first: 41) } == nil)
  }

  @Test("the history survives closing and reopening a file, and an older schema migrates to it")
  func reopen() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    do {
      let store = try Datastore(path: path)
      try store.commit([], history: entries(from: 7, [.action, .eligibility]))
      store.close()
    }
    let store = try Datastore(path: path)
    #expect(try store.history(after: 0, limit: 10).map(\.cursor) == [7, 8])
    #expect(try store.historyState().lastCursor == 8)
    #expect(try store.sizeBytes() > 0)
  }
}

@Suite struct HistoryCodecTests {
  @Test("a donation of the event the chunk's previous entry named stores no id; it decodes back, across chunks too")
  func repeatedEventIDs() throws {
    var batch = HistoryBatch()
    let names = ["goal.a", "goal.a", "goal.b", "goal.a"] + Array(repeating: "goal.a", count: 300)
    var cursor: Int64 = 10
    var impressionAt = 0
    for (index, name) in names.enumerated() {
      if index == 2 {
        cursor += 1
        batch.append(HistoryEvent(cursor: cursor, kind: .impression, at: 5, tipID: "t.tip"))
        impressionAt = index
      }
      cursor += 1
      batch.appendDonation(cursor: cursor, event: name, at: Double(index))
    }
    let events = batch.events
    #expect(events.count == names.count + 1)
    let donations = events.filter { $0.kind == .donation }
    #expect(donations.map { $0.eventID } == names.map { Optional($0) })
    #expect(donations.map { $0.at } == names.indices.map(Double.init))
    #expect(events[impressionAt].kind == .impression && events[impressionAt].eventID == nil)
    // The repeated ids were not written: well under the bytes of writing each id.
    #expect(batch.bytes.count < names.count * 14)
  }

  @Test(
    "a run of donations stores continuations: instants exact in any order, the run broken by a gap, another event or a chunk's end"
  )
  func continuations() throws {
    // Instants a run may hold: microseconds apart, equal, earlier than the previous (a donation dated by the
    // client), far apart, negative, and the extremes of the bit patterns (wrapping differences).
    let base = 1_764_500_000.123456
    let instants: [Double] = [
      base, base + 0.000002, base + 0.000002, base - 3_600, base + 86_400 * 400, -1.5, 0, .greatestFiniteMagnitude,
      -.greatestFiniteMagnitude, .leastNonzeroMagnitude, base,
    ]
    var batch = HistoryBatch()
    var expected: [HistoryEvent] = []
    var cursor: Int64 = 100
    func donate(_ name: String, _ at: Double, skip: Int64 = 0) {
      cursor += 1 + skip
      batch.appendDonation(cursor: cursor, event: name, at: at)
      expected.append(HistoryEvent(cursor: cursor, kind: .donation, at: at, eventID: name))
    }
    for at in instants { donate("goal.a", at) }
    donate("goal.a", base, skip: 2)  // a gap in the cursors (a cursor given to another entry elsewhere)
    donate("goal.b", base)
    donate("goal.a", base + 1)
    cursor += 1
    let impression = HistoryEvent(cursor: cursor, kind: .impression, at: base, tipID: "t", duration: 2)
    batch.append(impression)
    expected.append(impression)
    donate("goal.a", base + 2)  // after an entry of another kind: written whole
    for k in 0..<600 { donate("goal.a", base + 3 + Double(k) * 0.000001) }  // crosses two chunk ends
    #expect(batch.events == expected)
    // 600 continuations a microsecond apart (a few units in the last place) and a few whole entries: about one byte
    // each (and a tag and a count per run), not 12.
    #expect(batch.bytes.count < 600 + 20 * 16)

    // Stored and read back through the datastore, a HistoryEvent batch of donations encodes the same way.
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let store = try Datastore(path: directory.file("store.sqlite"))
    try store.commit([], history: batch)
    #expect(try store.historyForMetrics() == expected)
    #expect(HistoryBatch(expected).bytes == batch.bytes)

    // A run with nothing to continue (a chunk's first entry, or after another kind) is malformed, and so is an
    // empty run or one cut short.
    let orphan: [UInt8] = [HistoryCodec.runTag, 1, 2]
    #expect(orphan.withUnsafeBytes { HistoryCodec.decode($0, first: 1) } == nil)
    var afterImpression = HistoryBatch([impression]).bytes
    afterImpression += orphan
    #expect(afterImpression.withUnsafeBytes { HistoryCodec.decode($0, first: cursor) } == nil)
    var first = HistoryBatch()
    first.appendDonation(cursor: 1, event: "goal.a", at: base)
    let whole = first.bytes
    first.appendDonation(cursor: 2, event: "goal.a", at: base + 1)
    #expect(
      first.events.count == 2 && first.bytes.starts(with: whole) && first.bytes[whole.count] == HistoryCodec.runTag)
    for damaged in [
      whole + [HistoryCodec.runTag, 0], whole + [HistoryCodec.runTag, 2, 4], whole + [HistoryCodec.runTag],
    ] {
      #expect(damaged.withUnsafeBytes { HistoryCodec.decode($0, first: 1) } == nil)
    }
  }

  @Test("a schema 7 file's history (donations written whole) migrates and reads back beside continuations")
  func schema7History() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.file("store.sqlite")
    // A schema 7 file as that build wrote it: every donation entry whole (kind, cursor, instant, presence, id).
    let old = (1...5).map {
      HistoryEvent(cursor: Int64($0), kind: .donation, at: 1_000 + Double($0), eventID: "goal.a")
    }
    do {
      let side = try SQLiteConnection(path: path)
      try createDatastore(side, version: 7)
      let insert = try side.prepareUncached(
        "INSERT INTO history (id, last, first_at, last_at, kinds, entries) VALUES (1, 5, 1001, 1005, 64, ?1)")
      insert.bindBlob(1, HistoryCodec.encode(old[...]))
      try insert.run()
      side.close()
    }
    let store = try Datastore(path: path)
    #expect(store.schemaVersion == Datastore.currentSchemaVersion)
    #expect(try store.historyForMetrics() == old)
    var batch = HistoryBatch()
    for cursor in 6...9 { batch.appendDonation(cursor: Int64(cursor), event: "goal.a", at: 1_000 + Double(cursor)) }
    try store.commit([], history: batch)
    let all = (1...9).map {
      HistoryEvent(cursor: Int64($0), kind: .donation, at: 1_000 + Double($0), eventID: "goal.a")
    }
    #expect(try store.historyForMetrics() == all)
    #expect(try store.historyState().lastCursor == 9)
  }
}
