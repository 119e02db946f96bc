/// The reply of a change made with an idempotency key: a repeat of the key within the window is answered with it and
/// changes nothing (`idempotencyKey`, issue #34). Committed in the change's own transaction — the datastore's on a
/// one-user daemon, PostgreSQL's in hosted mode.
public struct IdempotentReply: Sendable, Hashable {
  /// The client's key (1–128 bytes).
  public var key: String
  /// The change's result, as JSON (the reply without its envelope: a repeat gets it under its own id).
  public var result: [UInt8]
  /// When the change was made (seconds since the epoch, wall clock): the key is kept `--idempotency-hours` from it.
  public var at: Double

  public init(key: String, result: [UInt8], at: Double) {
    self.key = key
    self.result = result
    self.at = at
  }
}

extension Datastore {
  /// Every idempotent reply made at or after `since`.
  public func idempotentReplies(since: Double) throws(DatastoreError) -> [IdempotentReply] {
    let connection = try openConnection()
    return try sqlite("cannot read") { () throws(SQLiteError) in
      let rows = try connection.prepareUncached("SELECT key, reply, at FROM idempotency WHERE at >= ?1")
      rows.bind(1, since)
      var replies: [IdempotentReply] = []
      while try rows.step() {
        replies.append(
          IdempotentReply(key: rows.text(0) ?? "", result: Array(rows.blobBytes(1)), at: rows.double(2)))
      }
      return replies
    }
  }

  /// Deletes the idempotent replies made before `cutoff`; returns how many.
  @discardableResult
  public func pruneIdempotentReplies(before cutoff: Double) throws(DatastoreError) -> Int {
    let connection = try openConnection()
    return try sqlite("cannot write to") { () throws(SQLiteError) in
      let delete = try connection.prepareUncached("DELETE FROM idempotency WHERE at < ?1")
      delete.bind(1, cutoff)
      try delete.run()
      return connection.changes
    }
  }

  func write(_ reply: IdempotentReply, _ connection: SQLiteConnection) throws(SQLiteError) {
    let insert = try connection.prepare(SQL.insertIdempotentReply)
    insert.bind(1, reply.key)
    insert.bindBlob(2, reply.result)
    insert.bind(3, reply.at)
    try insert.run()
  }
}
