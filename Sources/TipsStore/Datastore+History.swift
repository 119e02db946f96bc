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
}

extension Datastore {
  // MARK: Writing (inside commit's transaction)

  /// Appends history entries (their cursors already assigned), and records each eligibility change as its tip's
  /// last recorded state.
  func writeHistory(_ events: [HistoryEvent], _ connection: SQLiteConnection) throws(SQLiteError) {
    let insert = try connection.prepare(SQL.insertHistory)
    for event in events {
      insert.bind(1, event.cursor)
      insert.bind(2, event.at)
      insert.bind(3, event.kind.code)
      insert.bind(4, event.tipID)
      insert.bind(5, event.eventID)
      insert.bind(6, event.variant)
      insert.bind(7, event.duration)
      insert.bind(8, event.actionID)
      if let index = event.actionIndex { insert.bind(9, index) } else { insert.bindNull(9) }
      insert.bind(10, event.reason)
      insert.bind(11, event.status)
      if let flag = event.shouldDisplay { insert.bind(12, flag ? 1 : 0) } else { insert.bindNull(12) }
      try insert.run()
      if event.kind == .eligibility, let tip = event.tipID, let status = event.status {
        let upsert = try connection.prepare(SQL.upsertHistoryTip)
        upsert.bind(1, tip)
        upsert.bind(2, status)
        upsert.bind(3, event.reason)
        upsert.bind(4, event.shouldDisplay == true ? 1 : 0)
        upsert.bind(5, event.variant)
        try upsert.run()
      }
    }
  }

  // MARK: Reading

  /// The newest cursor and every tip's last recorded eligibility (read once at start).
  public func historyState() throws(DatastoreError) -> HistoryState {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      var state = HistoryState()
      let bounds = try connection.prepare(SQL.selectHistoryBounds)
      if try bounds.step() { state.lastCursor = bounds.int64(1) }
      bounds.reset()
      let tips = try connection.prepare(SQL.selectHistoryTips)
      while try tips.step() {
        guard let tip = tips.text(0), let status = tips.text(1) else { continue }
        state.tips[tip] = RecordedTipState(
          status: status, reason: tips.text(2), shouldDisplay: tips.int(3) != 0, variant: tips.text(4))
      }
      tips.reset()
      return state
    }
  }

  /// Up to `limit` streamed entries (every kind but donations) with a cursor above `after`, oldest first.
  public func history(after: Int64, limit: Int) throws(DatastoreError) -> [HistoryEvent] {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      let select = try connection.prepare(SQL.selectHistoryAfter)
      select.bind(1, after)
      select.bind(2, max(0, limit))
      return try readEvents(select)
    }
  }

  /// Every impression, action and donation kept, oldest first: what the metrics read.
  public func historyForMetrics() throws(DatastoreError) -> [HistoryEvent] {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      try readEvents(try connection.prepare(SQL.selectHistoryForMetrics))
    }
  }

  /// The history's cursors and its oldest instant.
  public func historyBounds() throws(DatastoreError) -> HistoryBounds {
    let connection = try openConnection()
    return try sqlite("cannot read the history of") { () throws(SQLiteError) in
      var result = HistoryBounds(oldestCursor: nil, newestCursor: 0, oldestAt: nil)
      let bounds = try connection.prepare(SQL.selectHistoryBounds)
      if try bounds.step() { result.newestCursor = bounds.int64(1) }
      bounds.reset()
      let streamed = try connection.prepare(SQL.selectStreamedOldest)
      if try streamed.step(), !streamed.isNull(0) { result.oldestCursor = streamed.int64(0) }
      streamed.reset()
      let oldest = try connection.prepare(SQL.selectHistoryOldestAt)
      if try oldest.step() { result.oldestAt = oldest.double(0) }
      oldest.reset()
      return result
    }
  }

  private func readEvents(_ select: Statement) throws(SQLiteError) -> [HistoryEvent] {
    defer { select.reset() }
    var events: [HistoryEvent] = []
    while try select.step() {
      guard let kind = HistoryEvent.Kind(code: select.int(2)) else {
        throw SQLiteError(corrupt: "history entry \(select.int64(0)) has an unknown kind \(select.int(2))")
      }
      events.append(
        HistoryEvent(
          cursor: select.int64(0), kind: kind, at: select.double(1), tipID: select.text(3), eventID: select.text(4),
          variant: select.text(5), duration: select.optionalDouble(6), actionID: select.text(7),
          actionIndex: select.isNull(8) ? nil : select.int(8), reason: select.text(9), status: select.text(10),
          shouldDisplay: select.isNull(11) ? nil : select.int(11) != 0))
    }
    return events
  }

  // MARK: Pruning

  /// Deletes the entries older than `cutoff` from the start of the history, in cursor order, up to the first entry
  /// at or after it (an older entry after a younger one — the clock went back — waits for a later prune). The
  /// newest entry is always kept, so cursors continue after it. One transaction; returns the entries deleted.
  @discardableResult
  public func pruneHistory(before cutoff: Timestamp) throws(DatastoreError) -> Int {
    let connection = try openConnection()
    preloaded = nil
    return try sqlite("cannot prune the history of") { () throws(SQLiteError) in
      try connection.prepare(SQL.begin).run()
      do throws(SQLiteError) {
        let bounds = try connection.prepare(SQL.selectHistoryBounds)
        var newest: Int64 = 0
        if try bounds.step() { newest = bounds.int64(1) }
        bounds.reset()
        let young = try connection.prepare(SQL.selectFirstYoung)
        young.bind(1, cutoff)
        var keepFrom = newest
        if try young.step() { keepFrom = min(newest, young.int64(0)) }
        young.reset()
        let delete = try connection.prepare(SQL.deleteHistoryBefore)
        delete.bind(1, keepFrom)
        try delete.run()
        let deleted = connection.changes
        try connection.prepare(SQL.commit).run()
        return deleted
      } catch {
        if connection.inTransaction { try? connection.execute(SQL.rollback) }
        throw error
      }
    }
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
