import CSQLite
public import TipsEngine
import TipsJSON

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// One event's stored donations as the store tracks them in memory: the event's row id in `events`, its chunks
/// (row id, size and the lifetime count after it), oldest first — a queue, appended at each commit with donations
/// of the event and consumed from the front when dead chunks are deleted — the lifetime count, and the number of
/// the oldest donation still kept (donations are numbered from 1 over the event's life).
final class EventHistory {
  let rowID: Int64
  /// The number of the newest donation stored (the newest chunk's `end_seq`).
  var lifetime: Int
  /// `events.dropped` since schema 5: what the lifetime count adds to the numbering (set by merges from other
  /// devices, and carried over from the lifetime counts of schema 4).
  var offset = 0
  /// The number of the oldest donation still kept; `lifetime + 1` when none is.
  private(set) var firstVisible: Int
  private var chunks: [(rowID: Int64, count: Int, endSeq: Int)]
  private var head = 0

  init(rowID: Int64, lifetime: Int = 0, firstVisible: Int = 1, chunks: [(rowID: Int64, count: Int, endSeq: Int)] = []) {
    self.rowID = rowID
    self.lifetime = lifetime
    self.firstVisible = firstVisible
    self.chunks = chunks
  }

  /// Keeps at most the newest `limit` donations; returns whether that dropped any.
  func bound(to limit: Int) -> Bool {
    let first = lifetime - max(limit, 0) + 1
    guard first > firstVisible else { return false }
    firstVisible = first
    return true
  }

  func append(chunk rowID: Int64, count: Int, endSeq: Int) {
    chunks.append((rowID, count, endSeq))
  }

  var oldest: (rowID: Int64, count: Int, endSeq: Int)? { head < chunks.count ? chunks[head] : nil }
  var newest: (rowID: Int64, count: Int, endSeq: Int)? { head < chunks.count ? chunks[chunks.count - 1] : nil }

  /// Chunks at the front wholly past the bound, the newest excepted (it holds the numbers).
  var deadChunks: Int {
    var index = head
    while index < chunks.count - 1 && chunks[index].endSeq < firstVisible { index += 1 }
    return index - head
  }

  /// Forgets every chunk; returns their row ids (to delete).
  func removeAll() -> [Int64] {
    let ids = chunks[head...].map { $0.rowID }
    chunks = []
    head = 0
    return ids
  }

  /// Numbers donations afresh after a rewrite: `count` donations, all kept.
  func restart(numbering count: Int) {
    lifetime = count
    firstVisible = 1
  }

  /// Forgets the oldest chunk (deleted).
  func removeOldest() {
    head += 1
    if head >= 1024 && head * 2 >= chunks.count {
      chunks.removeFirst(head)
      head = 0
    }
  }
}

extension Datastore {
  /// Reads everything into an ``EngineSnapshot`` for ``Engine/restore(_:)``: each event's donations oldest
  /// first, persisted parameters, tip records, cooldown, display frequency and donation limits.
  ///
  /// One ordered scan of the donations; associated values are parsed only when present, and identical ones
  /// share a single parsed value.
  public func load() throws(DatastoreError) -> EngineSnapshot {
    let connection = try openConnection()
    if let preloaded {
      self.preloaded = nil
      return preloaded
    }
    return try load(connection)
  }

  /// Reads the snapshot in one read transaction and rebuilds ``histories`` from it.
  func load(_ connection: SQLiteConnection) throws(DatastoreError) -> EngineSnapshot {
    try sqlite("cannot read") { () throws(SQLiteError) in
      try connection.prepare(SQL.beginRead).run()
      do throws(SQLiteError) {
        let (snapshot, histories) = try readSnapshot(connection)
        try connection.prepare(SQL.commit).run()
        self.histories = histories
        return snapshot
      } catch {
        if connection.inTransaction { try? connection.execute(SQL.rollback) }
        throw error
      }
    }
  }

  /// The events table by dense slot: names, row ids, and what each event's lifetime count adds to its numbering.
  private func readEvents(
    _ connection: SQLiteConnection
  ) throws(SQLiteError) -> (names: [String], rowIDs: [Int64], offsets: [Int]) {
    var names: [String] = []
    var rowIDs: [Int64] = []
    var offsets: [Int] = []
    let events = try connection.prepare(SQL.selectEvents)
    while try events.step() {
      rowIDs.append(events.int64(0))
      names.append(events.text(1) ?? "")
      offsets.append(events.int(2))
    }
    return (names, rowIDs, offsets)
  }

  private func readSnapshot(
    _ connection: SQLiteConnection
  ) throws(SQLiteError) -> (EngineSnapshot, [String: EventHistory]) {
    var snapshot = EngineSnapshot()

    // Each event gets a dense slot, found from a donation's integer event id without hashing.
    let (names, rowIDs, offsets) = try readEvents(connection)
    let slots = EventSlots(rowIDs: rowIDs)
    var buckets = [[Donation]](repeating: [], count: names.count)
    var chunks = [[(rowID: Int64, count: Int, endSeq: Int)]](repeating: [], count: names.count)
    // Per slot: the number of the first donation decoded, and the newest chunk's numbers.
    var firstDecoded = [Int](repeating: 1, count: names.count)
    var lifetimes = [Int](repeating: 0, count: names.count)
    var firstVisibles = [Int](repeating: 1, count: names.count)

    var infos = InfoCache()
    let rows = try connection.prepare(SQL.selectChunks)
    while try rows.step() {
      let eventRowID = rows.int64(1)
      guard let slot = slots[eventRowID] else {
        throw SQLiteError(
          corrupt: "a donation chunk refers to event id \(eventRowID), which is not in the events table")
      }
      let count = rows.int(2)
      let endSeq = rows.int(3)
      let start = endSeq - count + 1
      if chunks[slot].isEmpty {
        firstDecoded[slot] = start
      } else if start != lifetimes[slot] + 1 {
        throw SQLiteError(corrupt: "the donation chunks of event \(names[slot]) are not consecutive")
      }
      let before = buckets[slot].count
      try DonationChunk.forEach(rows.blobBytes(5), event: names[slot]) { (at, json) throws(SQLiteError) in
        let info = try json.map { (bytes) throws(SQLiteError) in try infos.object(bytes, event: names[slot]) }
        buckets[slot].append(Donation(at: at, info: info))
      }
      guard count > 0, buckets[slot].count - before == count else {
        throw SQLiteError(corrupt: "a donation chunk of event \(names[slot]) holds another count than it says")
      }
      chunks[slot].append((rows.int64(0), count, endSeq))
      lifetimes[slot] = endSeq
      firstVisibles[slot] = rows.int(4)
    }

    var histories: [String: EventHistory] = [:]
    histories.reserveCapacity(names.count)
    snapshot.donations.reserveCapacity(names.count)
    for slot in names.indices {
      let lifetime = lifetimes[slot]
      let firstVisible = firstVisibles[slot]
      guard firstVisible >= firstDecoded[slot], firstVisible <= lifetime + 1 else {
        throw SQLiteError(
          corrupt: "event \(names[slot]) keeps donations from number \(firstVisible), which it does not hold")
      }
      let history = EventHistory(
        rowID: rowIDs[slot], lifetime: lifetime, firstVisible: firstVisible, chunks: chunks[slot])
      history.offset = offsets[slot]
      histories[names[slot]] = history
      // Donations numbered below firstVisible are dropped (the dead chunks not yet deleted, a straddling chunk's).
      let skip = firstVisible - firstDecoded[slot]
      let visible = buckets[slot].count - skip
      if visible > 0 {
        snapshot.donations[names[slot]] = skip == 0 ? buckets[slot] : Array(buckets[slot].suffix(visible))
      }
      if lifetime + offsets[slot] > visible { snapshot.lifetimeCounts[names[slot]] = lifetime + offsets[slot] }
    }

    let parameters = try connection.prepare(SQL.selectParameters)
    while try parameters.step() {
      let id = parameters.text(0) ?? ""
      guard let bytes = parameters.textBytes(1) else {
        throw SQLiteError(corrupt: "parameter \(id) has no value")
      }
      do {
        snapshot.parameters[id] = try JSONParser.parse(bytes)
      } catch {
        throw SQLiteError(corrupt: "the value of parameter \(id) is not valid JSON (\(error))")
      }
    }

    let records = try connection.prepare(SQL.selectTipRecords)
    while try records.step() {
      let id = records.text(0) ?? ""
      var record = TipRecord()
      if let reason = records.text(1) {
        guard let parsed = InvalidationReason(rawValue: reason) else {
          throw SQLiteError(corrupt: "tip \(id) has an unknown invalidation reason \"\(reason)\"")
        }
        record.invalidationReason = parsed
      }
      record.invalidatedAt = records.optionalDouble(2)
      record.displayCount = records.int(3)
      record.displayedDuration = records.double(4)
      record.firstDisplayedAt = records.optionalDouble(5)
      record.lastDisplayedAt = records.optionalDouble(6)
      snapshot.tipRecords[id] = record
    }

    var suppressedSince: Double?
    var suppressedUntil: Double?
    var suppressionReason: String?
    let meta = try connection.prepare(SQL.selectMeta)
    while try meta.step() {
      switch meta.text(0) {
      case MetaKey.cooldownStartedAt:
        snapshot.cooldownStartedAt = meta.optionalDouble(1)
      case MetaKey.displayFrequency:
        let raw = meta.text(1) ?? ""
        guard let frequency = DisplayFrequency(rawValue: raw) else {
          throw SQLiteError(corrupt: "unknown display frequency \"\(raw)\"")
        }
        snapshot.displayFrequency = frequency
      case MetaKey.installID:
        snapshot.installID = meta.text(1)
      case MetaKey.suppressedSince:
        suppressedSince = meta.optionalDouble(1)
      case MetaKey.suppressedUntil:
        suppressedUntil = meta.optionalDouble(1)
      case MetaKey.suppressionReason:
        suppressionReason = meta.text(1)
      default:
        break  // keys of later versions are not an error
      }
    }

    if let since = suppressedSince {
      snapshot.suppression = Suppression(since: since, until: suppressedUntil, reason: suppressionReason)
    }

    let limits = try connection.prepare(SQL.selectLimits)
    while try limits.step() {
      let event = limits.text(0) ?? ""
      if limits.optionalDouble(1) != nil { snapshot.donationLimits[event] = limits.int(1) }
      if let maxAge = limits.optionalDouble(2) { snapshot.donationMaxAges[event] = maxAge }
    }

    let exposures = try connection.prepare(SQL.selectExposures)
    while try exposures.step() {
      snapshot.exposures[exposures.text(0) ?? ""] = exposures.double(1)
    }

    let variants = try connection.prepare(SQL.selectVariants)
    while try variants.step() {
      snapshot.variantAssignments[variants.text(0) ?? ""] = variants.text(1) ?? ""
    }
    return (snapshot, histories)
  }

  /// Rebuilds ``histories`` without loading the donations (writes before any load): one scan of chunk ids and sizes.
  func readHistories(_ connection: SQLiteConnection) throws(SQLiteError) -> [String: EventHistory] {
    let (names, rowIDs, offsets) = try readEvents(connection)
    let slots = EventSlots(rowIDs: rowIDs)
    var chunks = [[(rowID: Int64, count: Int, endSeq: Int)]](repeating: [], count: names.count)
    var firstVisibles = [Int](repeating: 1, count: names.count)
    let rows = try connection.prepare(SQL.selectChunkCounts)
    while try rows.step() {
      let eventRowID = rows.int64(1)
      guard let slot = slots[eventRowID] else {
        throw SQLiteError(
          corrupt: "a donation chunk refers to event id \(eventRowID), which is not in the events table")
      }
      chunks[slot].append((rows.int64(0), rows.int(2), rows.int(3)))
      firstVisibles[slot] = rows.int(4)
    }
    rows.reset()
    var histories: [String: EventHistory] = [:]
    for slot in names.indices {
      let history = EventHistory(
        rowID: rowIDs[slot], lifetime: chunks[slot].last?.endSeq ?? 0, firstVisible: firstVisibles[slot],
        chunks: chunks[slot])
      history.offset = offsets[slot]
      histories[names[slot]] = history
    }
    return histories
  }
}

extension SQLiteError {
  /// Damaged content found by the datastore itself (not reported by SQLite).
  init(corrupt message: String) {
    self.init(code: SQLITE_CORRUPT, message: message, fromSQLite: false)
  }
}

/// Maps an event's row id to its dense slot: an array when row ids are compact (always, in practice), a
/// dictionary otherwise.
private struct EventSlots {
  private var dense: [Int32] = []
  private var sparse: [Int64: Int] = [:]
  private let isDense: Bool

  init(rowIDs: [Int64]) {
    let maxRowID = rowIDs.max() ?? 0
    isDense = rowIDs.allSatisfy { $0 >= 0 } && maxRowID <= Int64(4 * rowIDs.count + 1024)
    if isDense {
      dense = [Int32](repeating: -1, count: Int(maxRowID) + 1)
      for (slot, rowID) in rowIDs.enumerated() { dense[Int(rowID)] = Int32(slot) }
    } else {
      for (slot, rowID) in rowIDs.enumerated() { sparse[rowID] = slot }
    }
  }

  subscript(rowID: Int64) -> Int? {
    if isDense {
      guard rowID >= 0 && rowID < Int64(dense.count) else { return nil }
      let slot = dense[Int(rowID)]
      return slot >= 0 ? Int(slot) : nil
    }
    return sparse[rowID]
  }
}

/// Parses donation info objects, sharing one parsed value among identical texts (donations of an event often
/// carry the same few associated values): a hash of the raw bytes finds the earlier parse without building a
/// key, so a repeated info costs no allocation. Bounded so that unique infos do not grow it without limit, and
/// switched off when it is full and rarely hits (every info distinct), so that it then costs nothing.
private struct InfoCache {
  private var entries: [UInt64: (bytes: [UInt8], object: JSONObject)] = [:]
  private var lookups = 0
  private var hits = 0
  private var enabled = true
  private static let maxEntries = 4096
  private static let maxBytes = 256

  mutating func object(_ bytes: UnsafeRawBufferPointer, event: String) throws(SQLiteError) -> JSONObject {
    let cacheable = enabled && bytes.count > 0 && bytes.count <= Self.maxBytes
    var hash: UInt64 = 0
    if cacheable {
      hash = 0xcbf2_9ce4_8422_2325
      for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
      lookups += 1
      if let entry = entries[hash], entry.bytes.count == bytes.count,
        entry.bytes.withUnsafeBytes({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 })
      {
        hits += 1
        return entry.object
      }
      if entries.count >= Self.maxEntries && lookups >= 4 * Self.maxEntries && hits * 4 < lookups {
        enabled = false
        entries = [:]
      }
    }
    let value: JSONValue
    do {
      value = try JSONParser.parse(bytes)
    } catch {
      throw SQLiteError(
        corrupt: "a donation of event \(event) has associated values that are not valid JSON (\(error))")
    }
    guard case .object(let object) = value else {
      throw SQLiteError(corrupt: "a donation of event \(event) has associated values that are not a JSON object")
    }
    if cacheable && enabled && entries.count < Self.maxEntries && entries[hash] == nil {
      entries[hash] = (Array(bytes), object)
    }
    return object
  }
}
