import CSQLite

extension Datastore {
  /// Reads the sync layer's tables in one read transaction.
  public func loadSync() throws(DatastoreError) -> SyncSnapshot {
    let connection = try openConnection()
    return try sqlite("cannot read") { () throws(SQLiteError) in
      try connection.prepare(SQL.beginRead).run()
      do throws(SQLiteError) {
        var snapshot = SyncSnapshot()
        let meta = try connection.prepare(SQL.selectSyncMeta)
        while try meta.step() { snapshot.meta[meta.text(0) ?? ""] = meta.text(1) ?? "" }
        let state = try connection.prepare(SQL.selectSyncState)
        while try state.step() {
          snapshot.state.append(
            SyncStateRow(
              kind: state.text(0) ?? "", device: state.text(1) ?? "", key: state.text(2) ?? "",
              value: state.text(3) ?? ""))
        }
        let outbox = try connection.prepare(SQL.selectOutbox)
        while try outbox.step() {
          snapshot.outbox.append(OutboxRow(seq: outbox.int64(0), created: outbox.double(1), op: outbox.text(2) ?? ""))
        }
        try connection.prepare(SQL.commit).run()
        return snapshot
      } catch {
        if connection.inTransaction { try? connection.execute(SQL.rollback) }
        throw error
      }
    }
  }

  func write(_ write: SyncWrite, _ connection: SQLiteConnection) throws(SQLiteError) {
    switch write {
    case .meta(let key, let value):
      if let value {
        let upsert = try connection.prepare(SQL.upsertSyncMeta)
        upsert.bind(1, key)
        upsert.bind(2, value)
        try upsert.run()
      } else {
        let delete = try connection.prepare(SQL.deleteSyncMeta)
        delete.bind(1, key)
        try delete.run()
      }
    case .state(let kind, let device, let key, let value):
      if let value {
        let upsert = try connection.prepare(SQL.upsertSyncState)
        upsert.bind(1, kind)
        upsert.bind(2, device)
        upsert.bind(3, key)
        upsert.bind(4, value)
        try upsert.run()
      } else {
        let delete = try connection.prepare(SQL.deleteSyncState)
        delete.bind(1, kind)
        delete.bind(2, device)
        delete.bind(3, key)
        try delete.run()
      }
    case .clearState:
      try connection.prepare(SQL.clearSyncState).run()
    case .outboxAppend(let seq, let created, let op):
      let insert = try connection.prepare(SQL.insertOutbox)
      insert.bind(1, seq)
      insert.bind(2, created)
      insert.bind(3, op)
      try insert.run()
    case .outboxDelete(let seq):
      let delete = try connection.prepare(SQL.deleteOutbox)
      delete.bind(1, seq)
      try delete.run()
    }
  }
}
