import CSQLite
public import TipsEngine
import TipsJSON

extension Datastore {
  /// Applies `writes`, in order, in ONE transaction (`BEGIN IMMEDIATE` … `COMMIT`), and returns once it is
  /// committed: only then may the mutations be acknowledged. On failure nothing of the batch is kept.
  ///
  /// The server groups every write of an event-loop turn into one call (group commit). `sync` holds the sync layer's
  /// writes of the same turn (its outbox and merge state), committed in the same transaction.
  public func commit(_ writes: [StateWrite], sync: [SyncWrite] = []) throws(DatastoreError) {
    guard !writes.isEmpty || !sync.isEmpty else { return }
    let connection = try openConnection()
    preloaded = nil
    try sqlite("cannot write to") { () throws(SQLiteError) in
      do throws(SQLiteError) {
        if histories == nil { histories = try readHistories(connection) }
        try connection.prepare(SQL.begin).run()
        for write in writes { try self.write(write, connection) }
        try recordDropped(connection)
        for write in sync { try self.write(write, connection) }
        try connection.prepare(SQL.commit).run()
      } catch {
        if connection.inTransaction { try? connection.execute(SQL.rollback) }
        // The in-memory histories may hold row ids of the rolled-back batch: rebuild them from the file.
        self.histories = nil
        self.droppedInBatch = [:]
        throw error
      }
    }
  }

  private func write(_ write: StateWrite, _ connection: SQLiteConnection) throws(SQLiteError) {
    switch write {
    case .donation(let eventID, let donation, let keepNewest):
      let history = try self.history(eventID, connection)
      let insert = try connection.prepare(SQL.insertDonation)
      insert.bind(1, history.rowID)
      insert.bind(2, donation.at)
      if let info = donation.info {
        insert.bindText(3, JSONValue.object(info).serialized())
      } else {
        insert.bindNull(3)
      }
      try insert.run()
      history.append(connection.lastInsertRowID)
      try trim(history, to: keepNewest, connection)

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
      let upsert = try connection.prepare(SQL.upsertLimit)
      upsert.bind(1, eventID)
      upsert.bind(2, limit)
      try upsert.run()
      if let history = histories?[eventID] {
        try trim(history, to: limit, connection)
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
      for table in Schema.dataTables {
        try connection.prepare("DELETE FROM \(table)").run()
      }
      histories = [:]
      droppedInBatch = [:]

    case .donations(let eventID, let donations, let lifetime):
      let history = try self.history(eventID, connection)
      let delete = try connection.prepare(SQL.deleteDonation)
      for id in history.removeOldest(history.count) {
        delete.bind(1, id)
        try delete.run()
      }
      let insert = try connection.prepare(SQL.insertDonation)
      for donation in donations {
        insert.bind(1, history.rowID)
        insert.bind(2, donation.at)
        if let info = donation.info {
          insert.bindText(3, JSONValue.object(info).serialized())
        } else {
          insert.bindNull(3)
        }
        try insert.run()
        history.append(connection.lastInsertRowID)
      }
      try setLifetime(history, lifetime, connection)

    case .lifetime(let eventID, let lifetime):
      try setLifetime(try self.history(eventID, connection), lifetime, connection)
    }
  }

  /// Sets an event's lifetime count outright (`dropped` = lifetime − kept), replacing what this batch trimmed so far.
  private func setLifetime(_ history: EventHistory, _ lifetime: Int, _ connection: SQLiteConnection) throws(SQLiteError) {
    droppedInBatch[history.rowID] = nil
    let update = try connection.prepare(SQL.setDropped)
    update.bind(1, history.rowID)
    update.bind(2, max(0, lifetime - history.count))
    try update.run()
  }

  /// Adds the donations trimmed in this batch to their events' `dropped` counts: one update per event per commit.
  private func recordDropped(_ connection: SQLiteConnection) throws(SQLiteError) {
    guard !droppedInBatch.isEmpty else { return }
    let update = try connection.prepare(SQL.addDropped)
    for (rowID, count) in droppedInBatch {
      update.bind(1, rowID)
      update.bind(2, count)
      try update.run()
    }
    droppedInBatch = [:]
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

  /// Deletes an event's oldest donations beyond `limit`, by primary key (nothing to do unless over the limit).
  private func trim(_ history: EventHistory, to limit: Int, _ connection: SQLiteConnection) throws(SQLiteError) {
    let excess = history.count - max(limit, 0)
    guard excess > 0 else { return }
    let delete = try connection.prepare(SQL.deleteDonation)
    droppedInBatch[history.rowID, default: 0] += excess
    for id in history.removeOldest(excess) {
      delete.bind(1, id)
      try delete.run()
      guard connection.changes == 1 else {
        // The in-memory history disagrees with the file (it never should): fail the batch, rebuild from the file.
        throw SQLiteError(
          code: SQLITE_INTERNAL, message: "donation \(id) of event id \(history.rowID) was not found", fromSQLite: false
        )
      }
    }
  }
}
