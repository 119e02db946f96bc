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

/// One event's stored donations as the store tracks them in memory: the event's row id in `events` and the row
/// ids of its donations, oldest first (a queue: appended on donation, consumed from the front when bounding).
final class EventHistory {
  let rowID: Int64
  private var ids: [Int64]
  private var head = 0

  init(rowID: Int64, ids: [Int64] = []) {
    self.rowID = rowID
    self.ids = ids
  }

  /// Stored donations.
  var count: Int { ids.count - head }

  func append(_ id: Int64) {
    ids.append(id)
  }

  /// The row ids of the `n` oldest donations, removed from the queue.
  func removeOldest(_ n: Int) -> ArraySlice<Int64> {
    let removed = ids[head..<(head + n)]
    head += n
    if head >= 1024 && head * 2 >= ids.count {
      ids.removeFirst(head)
      head = 0
    }
    return removed
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

  /// The events table: names and row ids by dense slot.
  private func readEvents(
    _ connection: SQLiteConnection
  ) throws(SQLiteError) -> (names: [String], rowIDs: [Int64], dropped: [Int]) {
    var names: [String] = []
    var rowIDs: [Int64] = []
    var dropped: [Int] = []
    let events = try connection.prepare(SQL.selectEvents)
    while try events.step() {
      rowIDs.append(events.int64(0))
      names.append(events.text(1) ?? "")
      dropped.append(events.int(2))
    }
    return (names, rowIDs, dropped)
  }

  private func readSnapshot(
    _ connection: SQLiteConnection
  ) throws(SQLiteError) -> (EngineSnapshot, [String: EventHistory]) {
    var snapshot = EngineSnapshot()

    // Each event gets a dense slot, found from a donation's integer event id without hashing.
    let (names, rowIDs, dropped) = try readEvents(connection)
    let slots = EventSlots(rowIDs: rowIDs)
    var buckets = [[Donation]](repeating: [], count: names.count)
    var ids = [[Int64]](repeating: [], count: names.count)

    var infos = InfoCache()
    let donations = try connection.prepare(SQL.selectDonations)
    while try donations.step() {
      let eventRowID = donations.int64(1)
      guard let slot = slots[eventRowID] else {
        throw SQLiteError(corrupt: "a donation refers to event id \(eventRowID), which is not in the events table")
      }
      var info: JSONObject?
      if let bytes = donations.textBytes(3) {
        info = try infos.object(bytes, event: names[slot])
      }
      buckets[slot].append(Donation(at: donations.double(2), info: info))
      ids[slot].append(donations.int64(0))
    }

    var histories: [String: EventHistory] = [:]
    histories.reserveCapacity(names.count)
    snapshot.donations.reserveCapacity(names.count)
    for slot in names.indices {
      histories[names[slot]] = EventHistory(rowID: rowIDs[slot], ids: ids[slot])
      if !buckets[slot].isEmpty { snapshot.donations[names[slot]] = buckets[slot] }
      if dropped[slot] > 0 { snapshot.lifetimeCounts[names[slot]] = buckets[slot].count + dropped[slot] }
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
      default:
        break  // keys of later versions are not an error
      }
    }

    let limits = try connection.prepare(SQL.selectLimits)
    while try limits.step() {
      snapshot.donationLimits[limits.text(0) ?? ""] = limits.int(1)
    }

    let variants = try connection.prepare(SQL.selectVariants)
    while try variants.step() {
      snapshot.variantAssignments[variants.text(0) ?? ""] = variants.text(1) ?? ""
    }
    return (snapshot, histories)
  }

  /// Rebuilds ``histories`` without loading the donations (writes before any load): one scan of row ids.
  func readHistories(_ connection: SQLiteConnection) throws(SQLiteError) -> [String: EventHistory] {
    let (names, rowIDs, _) = try readEvents(connection)
    let slots = EventSlots(rowIDs: rowIDs)
    var ids = [[Int64]](repeating: [], count: names.count)
    let donations = try connection.prepare(SQL.selectDonationIDs)
    while try donations.step() {
      let eventRowID = donations.int64(1)
      guard let slot = slots[eventRowID] else {
        throw SQLiteError(corrupt: "a donation refers to event id \(eventRowID), which is not in the events table")
      }
      ids[slot].append(donations.int64(0))
    }
    donations.reset()
    var histories: [String: EventHistory] = [:]
    for slot in names.indices {
      histories[names[slot]] = EventHistory(rowID: rowIDs[slot], ids: ids[slot])
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
