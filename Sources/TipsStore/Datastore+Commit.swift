import CSQLite
public import TipsEngine
import TipsJSON

extension Datastore {
  /// Applies `writes`, in order, and appends the `history` entries, in ONE transaction (`BEGIN IMMEDIATE` …
  /// `COMMIT`), and returns once it is committed: only then may the mutations be acknowledged. On failure nothing
  /// of the batch is kept.
  ///
  /// The server groups every write and history entry of an event-loop turn into one call (group commit). `sync`
  /// holds the sync layer's writes of the same turn (its outbox and merge state), committed in the same transaction.
  public func commit(
    _ writes: [StateWrite], history: [HistoryEvent] = [], sync: [SyncWrite] = [], replies: [IdempotentReply] = []
  ) throws(DatastoreError) {
    try commit(writes, history: HistoryBatch(history), sync: sync, replies: replies)
  }

  /// ``commit(_:history:sync:)`` with the history already encoded (the server's hot path).
  public func commit(
    _ writes: [StateWrite], history: HistoryBatch, sync: [SyncWrite] = [], replies: [IdempotentReply] = []
  ) throws(DatastoreError) {
    guard !writes.isEmpty || !history.isEmpty || !sync.isEmpty || !replies.isEmpty else { return }
    let connection = try openConnection()
    preloaded = nil
    try sqlite("cannot write to") { () throws(SQLiteError) in
      do throws(SQLiteError) {
        if histories == nil { histories = try readHistories(connection) }
        try connection.prepare(SQL.begin).run()
        for write in writes { try self.write(write, connection) }
        try flushChunks(connection)
        if !history.isEmpty { try writeHistory(history, connection) }
        for write in sync { try self.write(write, connection) }
        for reply in replies { try self.write(reply, connection) }
        try connection.prepare(SQL.commit).run()
      } catch {
        if connection.inTransaction { try? connection.execute(SQL.rollback) }
        // The in-memory histories may hold row ids of the rolled-back batch: rebuild them from the file.
        self.histories = nil
        self.pending.removeAll()
        throw error
      }
    }
  }

  private func write(_ write: StateWrite, _ connection: SQLiteConnection) throws(SQLiteError) {
    switch write {
    case .donation(let eventID, let donation, let keepNewest):
      // Packed with the batch's other donations of the event, written by flushChunks.
      pending.append(donation, event: eventID, keep: keepNewest)

    case .parameter(let id, let value):
      let upsert = try connection.prepare(SQL.upsertParameter)
      upsert.bind(1, id)
      upsert.bindText(2, value.serialized())
      try upsert.run()

    case .deleteParameter(let id):
      let delete = try connection.prepare(SQL.deleteParameter)
      delete.bind(1, id)
      try delete.run()

    case .tipRecord(let id, let record):
      if record.isEmpty {
        let delete = try connection.prepare(SQL.deleteTipRecord)
        delete.bind(1, id)
        try delete.run()
      } else {
        let upsert = try connection.prepare(SQL.upsertTipRecord)
        upsert.bind(1, id)
        upsert.bind(2, record.invalidationReason?.rawValue)
        upsert.bind(3, record.invalidatedAt)
        upsert.bind(4, record.displayCount)
        upsert.bind(5, record.displayedDuration)
        upsert.bind(6, record.firstDisplayedAt)
        upsert.bind(7, record.lastDisplayedAt)
        try upsert.run()
      }

    case .cooldown(let start):
      if let start {
        let upsert = try connection.prepare(SQL.upsertMeta)
        upsert.bind(1, MetaKey.cooldownStartedAt)
        upsert.bind(2, start)
        try upsert.run()
      } else {
        let delete = try connection.prepare(SQL.deleteMeta)
        delete.bind(1, MetaKey.cooldownStartedAt)
        try delete.run()
      }

    case .displayFrequency(let frequency):
      let upsert = try connection.prepare(SQL.upsertMeta)
      upsert.bind(1, MetaKey.displayFrequency)
      upsert.bind(2, frequency.rawValue)
      try upsert.run()

    case .donationLimit(let eventID, let limit):
      try flushChunks(connection)
      let upsert = try connection.prepare(SQL.upsertLimit)
      upsert.bind(1, eventID)
      upsert.bind(2, limit)
      try upsert.run()
      try bound(eventID, keepNewest: limit, connection)

    case .trimDonations(let eventID, let keepNewest):
      try flushChunks(connection)
      try bound(eventID, keepNewest: keepNewest, connection)

    case .donationMaxAge(let eventID, let seconds):
      let upsert = try connection.prepare(SQL.upsertMaxAge)
      upsert.bind(1, eventID)
      upsert.bind(2, seconds)
      try upsert.run()

    case .suppression(let suppression):
      // Three meta keys: since and until (REAL), reason (TEXT); absent ones deleted.
      try setMeta(MetaKey.suppressedSince, suppression.map { .since($0.since) }, connection)
      try setMeta(MetaKey.suppressedUntil, suppression?.until.map { .since($0) }, connection)
      try setMeta(MetaKey.suppressionReason, suppression?.reason.map { .text($0) }, connection)

    case .exposure(let tipID, let variant, let since):
      let key = Engine.recordKey(tipID: tipID, variant: variant)
      if let since {
        let upsert = try connection.prepare(SQL.upsertExposure)
        upsert.bind(1, key)
        upsert.bind(2, since)
        try upsert.run()
      } else {
        let delete = try connection.prepare(SQL.deleteExposure)
        delete.bind(1, key)
        try delete.run()
      }

    case .variantAssignment(let tipID, let variant):
      if let variant {
        let upsert = try connection.prepare(SQL.upsertVariant)
        upsert.bind(1, tipID)
        upsert.bind(2, variant)
        try upsert.run()
      } else {
        let delete = try connection.prepare(SQL.deleteVariant)
        delete.bind(1, tipID)
        try delete.run()
      }

    case .installID(let id):
      let upsert = try connection.prepare(SQL.upsertMeta)
      upsert.bind(1, MetaKey.installID)
      upsert.bind(2, id)
      try upsert.run()

    case .reset:
      // Donations staged before the reset would be deleted with everything else.
      pending.removeAll()
      for table in Schema.dataTables {
        try connection.prepare("DELETE FROM \(table)").run()
      }
      histories = [:]

    case .donations(let eventID, let donations, let lifetime):
      // Rewritten whole (a donation inserted before the newest, a merge from another device): the batch's pending
      // donations of the event are in the list, so they are not written on their own.
      pending.remove(eventID)
      let history = try self.history(eventID, connection)
      let delete = try connection.prepare(SQL.deleteChunk)
      for chunk in history.removeAll() {
        delete.bind(1, chunk)
        try delete.run()
      }
      if !donations.isEmpty {
        var bytes: [UInt8] = []
        for donation in donations { DonationChunk.append(donation, to: &bytes) }
        let insert = try connection.prepare(SQL.insertChunk)
        insert.bind(1, history.rowID)
        insert.bind(2, donations.count)
        insert.bind(3, donations.count)
        insert.bind(4, 1)
        insert.bindBlob(5, bytes)
        try insert.run()
        history.append(chunk: connection.lastInsertRowID, count: donations.count, endSeq: donations.count)
      }
      history.restart(numbering: donations.count)
      try setLifetime(history, lifetime, connection)

    case .lifetime(let eventID, let lifetime):
      try flushChunks(connection)
      try setLifetime(try self.history(eventID, connection), lifetime, connection)
    }
  }

  private enum MetaValue {
    case since(Double)
    case text(String)
  }

  /// Upserts (or, for nil, deletes) one `meta` key.
  private func setMeta(_ key: String, _ value: MetaValue?, _ connection: SQLiteConnection) throws(SQLiteError) {
    guard let value else {
      let delete = try connection.prepare(SQL.deleteMeta)
      delete.bind(1, key)
      try delete.run()
      return
    }
    let upsert = try connection.prepare(SQL.upsertMeta)
    upsert.bind(1, key)
    switch value {
    case .since(let instant): upsert.bind(2, instant)
    case .text(let text): upsert.bind(2, text)
    }
    try upsert.run()
  }

  /// Keeps at most the newest `keepNewest` donations of an event: no chunk is written, the event's newest chunk
  /// records the new bound and chunks wholly past it go.
  private func bound(_ eventID: String, keepNewest: Int, _ connection: SQLiteConnection) throws(SQLiteError) {
    guard let history = histories?[eventID], history.bound(to: keepNewest), let newest = history.newest else { return }
    let update = try connection.prepare(SQL.setFirstVisible)
    update.bind(1, newest.rowID)
    update.bind(2, history.firstVisible)
    try update.run()
    try deleteDeadChunks(history, connection)
  }

  /// Sets an event's lifetime count outright (a merge from another device): `events.dropped` holds what the
  /// lifetime count adds to the numbering of its chunks.
  private func setLifetime(_ history: EventHistory, _ lifetime: Int, _ connection: SQLiteConnection) throws(SQLiteError)
  {
    let offset = lifetime - history.lifetime
    guard offset != history.offset else { return }
    let update = try connection.prepare(SQL.setDropped)
    update.bind(1, history.rowID)
    update.bind(2, offset)
    try update.run()
    history.offset = offset
  }

  /// Writes the batch's pending donations: one chunk per event, then bounds each event's history.
  private func flushChunks(_ connection: SQLiteConnection) throws(SQLiteError) {
    guard !pending.isEmpty else { return }
    let insert = try connection.prepare(SQL.insertChunk)
    for (eventID, chunk) in zip(pending.events, pending.chunks) {
      let history = try self.history(eventID, connection)
      let endSeq = history.lifetime + chunk.count
      history.lifetime = endSeq
      _ = history.bound(to: chunk.keep)
      insert.bind(1, history.rowID)
      insert.bind(2, chunk.count)
      insert.bind(3, endSeq)
      insert.bind(4, history.firstVisible)
      insert.bindBlob(5, chunk.bytes)
      try insert.run()
      history.append(chunk: connection.lastInsertRowID, count: chunk.count, endSeq: endSeq)
      try deleteDeadChunks(history, connection)
    }
    pending.removeAll()
  }

  /// The event's history, inserting the event's name on its first donation.
  private func history(_ eventID: String, _ connection: SQLiteConnection) throws(SQLiteError) -> EventHistory {
    if let history = histories?[eventID] { return history }
    let insert = try connection.prepare(SQL.insertEvent)
    insert.bind(1, eventID)
    try insert.run()
    let history = EventHistory(rowID: connection.lastInsertRowID)
    histories?[eventID] = history
    return history
  }

  /// Deletes the event's chunks wholly past its bound (never the newest, which holds the numbers) once there are
  /// ``deadChunkBatch`` of them: a few deletes every so often instead of one per commit.
  private func deleteDeadChunks(_ history: EventHistory, _ connection: SQLiteConnection) throws(SQLiteError) {
    let dead = history.deadChunks
    guard dead >= deadChunkBatch else { return }
    let delete = try connection.prepare(SQL.deleteChunk)
    for _ in 0..<dead {
      guard let oldest = history.oldest else { break }
      delete.bind(1, oldest.rowID)
      try delete.run()
      guard connection.changes == 1 else {
        // The in-memory history disagrees with the file (it never should): fail the batch, rebuild from the file.
        throw SQLiteError(
          code: SQLITE_INTERNAL, message: "donation chunk \(oldest.rowID) of event id \(history.rowID) was not found",
          fromSQLite: false)
      }
      history.removeOldest()
    }
  }
}
