import CSQLite

/// A durable effect of the sync layer (`TipsSync`), committed in the same transaction as the engine's writes of the
/// turn (``Datastore/commit(_:sync:)``): a change and the operation that carries it to the other devices are stored
/// together or not at all.
public enum SyncWrite: Sendable, Hashable {
  /// A `sync_meta` entry (device id, account, cursor, clock…); nil deletes it.
  case meta(key: String, value: String?)
  /// One `sync_state` row: what `device` contributed under `kind` for `key` (JSON text); nil deletes it.
  case state(kind: String, device: String, key: String, value: String?)
  /// Deletes every `sync_state` row (a datastore reset of the account).
  case clearState
  /// Appends an operation to the outbox.
  case outboxAppend(seq: Int64, created: Double, op: String)
  /// Removes an operation from the outbox (PostgreSQL committed it, or a newer one superseded it).
  case outboxDelete(seq: Int64)
}

/// One `sync_state` row.
public struct SyncStateRow: Sendable, Hashable {
  public var kind: String
  public var device: String
  public var key: String
  public var value: String

  public init(kind: String, device: String, key: String, value: String) {
    self.kind = kind
    self.device = device
    self.key = key
    self.value = value
  }
}

/// One outbox entry: an operation not yet committed by PostgreSQL.
public struct OutboxRow: Sendable, Hashable {
  public var seq: Int64
  /// When it was queued (seconds since the epoch, wall clock).
  public var created: Double
  /// The operation's JSON text.
  public var op: String

  public init(seq: Int64, created: Double, op: String) {
    self.seq = seq
    self.created = created
    self.op = op
  }
}

/// Everything the sync layer stored, as ``Datastore/loadSync()`` reads it.
public struct SyncSnapshot: Sendable, Equatable {
  public var meta: [String: String] = [:]
  public var state: [SyncStateRow] = []
  /// Oldest first.
  public var outbox: [OutboxRow] = []

  public init() {}
}

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
