import CSQLite
public import TipsEngine

/// What the server needs of the history at start: where cursors continue, and each tip's last recorded eligibility.
public struct HistoryState: Sendable, Equatable {
  /// The newest cursor stored (0 when the history is empty).
  public var lastCursor: Int64
  /// The eligibility last recorded per tip.
  public var tips: [String: RecordedTipState]

  public init(lastCursor: Int64 = 0, tips: [String: RecordedTipState] = [:]) {
    self.lastCursor = lastCursor
    self.tips = tips
  }
}

/// The cursors and instants the history holds.
public struct HistoryBounds: Sendable, Equatable {
  /// The oldest streamed entry kept (nil when none is).
  public var oldestCursor: Int64?
  /// The newest cursor stored (0 when empty).
  public var newestCursor: Int64
  /// The instant of the oldest entry kept, of any kind (nil when empty).
  public var oldestAt: Timestamp?

  public init(oldestCursor: Int64?, newestCursor: Int64, oldestAt: Timestamp?) {
    self.oldestCursor = oldestCursor
    self.newestCursor = newestCursor
    self.oldestAt = oldestAt
  }
}

extension Datastore {
  /// Entries per `history` row at most (a commit that recorded more writes several rows).
  static let historyChunkSize = HistoryBatch.chunkSize

  // MARK: Writing (inside commit's transaction)

  /// Appends a batch's chunks, and records each eligibility change as its tip's last recorded state.
  func writeHistory(_ batch: HistoryBatch, _ connection: SQLiteConnection) throws(SQLiteError) {
    try insertChunks(batch, connection)
    for state in batch.tipStates {
      let upsert = try connection.prepare(SQL.upsertHistoryTip)
      upsert.bind(1, state.tip)
      upsert.bind(2, state.status)
      upsert.bind(3, state.reason)
      upsert.bind(4, state.shouldDisplay ? 1 : 0)
      upsert.bind(5, state.variant)
      try upsert.run()
    }
  }

  /// Inserts a batch's chunks, one row each.
  private func insertChunks(_ batch: HistoryBatch, _ connection: SQLiteConnection) throws(SQLiteError) {
    let insert = try connection.prepare(SQL.insertHistoryChunk)
    for chunk in batch.chunks {
      insert.bind(1, chunk.first)
      insert.bind(2, chunk.last)
      insert.bind(3, chunk.oldestAt)
      insert.bind(4, chunk.newestAt)
      insert.bind(5, chunk.kinds)
      batch.bytes[chunk.start..<chunk.end].withUnsafeBytes { insert.bindBlob(6, $0) }
      try insert.run()
    }
  }

  // MARK: Reading

  /// The newest cursor and every tip's last recorded eligibility: what the server's history recorder remembers (read
  /// at start, and again after a failed commit).
  public func historyState() throws(DatastoreError) -> HistoryState {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      var state = HistoryState()
      state.lastCursor = try newestCursor(connection)
      let tips = try connection.prepare(SQL.selectHistoryTips)
      defer { tips.reset() }
      while try tips.step() {
        guard let tip = tips.text(0), let status = tips.text(1) else { continue }
        state.tips[tip] = RecordedTipState(
          status: status, reason: tips.text(2), shouldDisplay: tips.int(3) != 0, variant: tips.text(4))
      }
      return state
    }
  }

  /// Up to `limit` streamed entries (every kind but donations) with a cursor above `after`, oldest first.
  public func history(after: Int64, limit: Int) throws(DatastoreError) -> [HistoryEvent] {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      guard limit > 0 else { return [] }
      // The chunk holding `after + 1` starts at or before it.
      let start = try connection.prepare(SQL.selectChunkStart)
      start.bind(1, after + 1)
      var from: Int64 = 0
      if try start.step(), !start.isNull(0) { from = start.int64(0) }
      start.reset()
      let chunks = try connection.prepare(SQL.selectChunksFrom)
      chunks.bind(1, from)
      defer { chunks.reset() }
      var out: [HistoryEvent] = []
      while out.count < limit, try chunks.step() {
        for event in try decodeChunk(chunks) where event.cursor > after && event.kind.isStreamed {
          out.append(event)
          if out.count == limit { break }
        }
      }
      return out
    }
  }

  /// Every impression, action and donation kept, oldest first: what the metrics read.
  public func historyForMetrics() throws(DatastoreError) -> [HistoryEvent] {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      let chunks = try connection.prepare(SQL.selectChunksWithKinds)
      chunks.bind(1, HistoryCodec.metricKinds)
      defer { chunks.reset() }
      var out: [HistoryEvent] = []
      while try chunks.step() {
        for event in try decodeChunk(chunks) where HistoryCodec.metricKinds & (1 << event.kind.code) != 0 {
          out.append(event)
        }
      }
      return out
    }
  }

  /// The history's cursors and its oldest instant.
  public func historyBounds() throws(DatastoreError) -> HistoryBounds {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      var result = HistoryBounds(oldestCursor: nil, newestCursor: try newestCursor(connection), oldestAt: nil)
      let streamed = try connection.prepare(SQL.selectFirstChunkWithKinds)
      streamed.bind(1, HistoryCodec.streamedKinds)
      if try streamed.step() {
        result.oldestCursor = try decodeChunk(streamed).first { $0.kind.isStreamed }?.cursor
      }
      streamed.reset()
      let oldest = try connection.prepare(SQL.selectOldestChunkAt)
      if try oldest.step() { result.oldestAt = oldest.double(0) }
      oldest.reset()
      return result
    }
  }

  /// The newest cursor assigned, even when pruning deleted its entry (0 when none ever was).
  private func newestCursor(_ connection: SQLiteConnection) throws(SQLiteError) -> Int64 {
    let newest = try connection.prepare(SQL.selectNewestCursor)
    defer { newest.reset() }
    return try newest.step() ? newest.int64(0) : 0
  }

  /// The entries of the row `select` is on (columns: id, entries).
  private func decodeChunk(_ select: Statement) throws(SQLiteError) -> [HistoryEvent] {
    let id = select.int64(0)
    guard let events = HistoryCodec.decode(select.blobBytes(1), first: id) else {
      throw SQLiteError(corrupt: "the history chunk starting at cursor \(id) cannot be decoded")
    }
    return events
  }

  // MARK: Pruning

  /// Deletes every entry older than `cutoff`, whatever the retention was when it was written: a chunk whose entries
  /// are all older goes whole, and one that spans the cutoff (a commit's entries on both sides of it, or donations
  /// dated before the clock went back) is written again with only its younger entries. Afterwards no entry older
  /// than `cutoff` is stored. When the entry with the newest cursor goes, `history_head` keeps that cursor, so
  /// cursors continue after it. One transaction; returns the entries deleted.
  @discardableResult
  public func pruneHistory(before cutoff: Timestamp) throws(DatastoreError) -> Int {
    try prune(before: cutoff, forgetTips: false)
  }

  /// Deletes every entry and the eligibility last recorded per tip: nothing of the history is kept (`--history-days
  /// 0`); cursors continue after the newest one assigned. Returns the entries deleted.
  @discardableResult
  public func deleteHistory() throws(DatastoreError) -> Int {
    try prune(before: .infinity, forgetTips: true)
  }

  private func prune(before cutoff: Timestamp, forgetTips: Bool) throws(DatastoreError) -> Int {
    let connection = try openConnection()
    preloaded = nil
    return try sqlite("cannot prune the history of") { () throws(SQLiteError) in
      try connection.prepare(SQL.begin).run()
      do throws(SQLiteError) {
        let head = try newestCursor(connection)
        let (whole, spanning) = try chunks(olderThan: cutoff, connection)
        var deleted = 0
        let delete = try connection.prepare(SQL.deleteHistoryChunk)
        for chunk in whole {
          delete.bind(1, chunk.id)
          try delete.run()
          deleted += chunk.count
        }
        for chunk in spanning {
          delete.bind(1, chunk.id)
          try delete.run()
          let kept = chunk.events.filter { $0.at >= cutoff }
          deleted += chunk.events.count - kept.count
          // Eligibility entries written again change no tip's last recorded state (history_tips is left alone).
          try insertChunks(HistoryBatch(kept), connection)
        }
        if try newestCursor(connection) < head {
          let upsert = try connection.prepare(SQL.upsertHistoryHead)
          upsert.bind(1, head)
          try upsert.run()
        }
        if forgetTips { try connection.prepare(SQL.deleteHistoryTips).run() }
        try connection.prepare(SQL.commit).run()
        return deleted
      } catch {
        if connection.inTransaction { try? connection.execute(SQL.rollback) }
        throw error
      }
    }
  }

  /// The chunks holding an entry older than `cutoff`: those wholly older (id, entries), and those spanning it
  /// (id, decoded).
  private func chunks(olderThan cutoff: Timestamp, _ connection: SQLiteConnection) throws(SQLiteError) -> (
    whole: [(id: Int64, count: Int)], spanning: [(id: Int64, events: [HistoryEvent])]
  ) {
    var whole: [(id: Int64, count: Int)] = []
    var spanning: [(id: Int64, events: [HistoryEvent])] = []
    let select = try connection.prepare(SQL.selectChunksOlderThan)
    defer { select.reset() }
    select.bind(1, cutoff)
    while try select.step() {
      let id = select.int64(0)
      if select.double(2) < cutoff {
        whole.append((id, Int(select.int64(1) - id + 1)))
        continue
      }
      guard let events = HistoryCodec.decode(select.blobBytes(3), first: id) else {
        throw SQLiteError(corrupt: "the history chunk starting at cursor \(id) cannot be decoded")
      }
      spanning.append((id, events))
    }
    return (whole, spanning)
  }

  // MARK: Size

  /// The database's size in bytes (pages × page size; the WAL not included).
  public func sizeBytes() throws(DatastoreError) -> Int64 {
    let connection = try openConnection()
    return try sqlite("cannot read the size of") { () throws(SQLiteError) in
      let pages = try connection.prepare(SQL.pageCount)
      _ = try pages.step()
      let count = pages.int64(0)
      pages.reset()
      let size = try connection.prepare(SQL.pageSize)
      _ = try size.step()
      let bytes = size.int64(0)
      size.reset()
      return count * bytes
    }
  }
}
