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
