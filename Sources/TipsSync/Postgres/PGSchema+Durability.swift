/// Version 15: a commit that answers a key with another transaction's reply waits for the synchronous standby.
///
/// `tipsd.commit` and `tipsd.commit_set` answer an idempotency key another transaction stored first with that first
/// reply (``PGSchema`` version 9), and the node acknowledges the request with it. PostgreSQL may show a commit its
/// synchronous standby does not have — one a restarted primary replayed, or one whose wait for the standby was ended
/// by `pg_terminate_backend` — and such a row is lost if the standby is promoted before it catches up (chaos seed
/// 194691823). A commit that stored nothing may have written no WAL, and PostgreSQL waits for the standby only when a
/// transaction wrote WAL under a transaction id; so the conflict branches write a transactional logical message
/// (``durabilityBarrier``, callable by any role at any wal_level): the COMMIT then returns only once the standby has
/// the WAL up to it, the first reply included. A hosted node's reads do the same (`HostedStore+Durability.swift`).
extension PGSchema {
  /// PL/pgSQL: a few bytes of WAL under the transaction's id, so its COMMIT waits for the synchronous standby.
  static let durabilityBarrier = "PERFORM pg_logical_emit_message(true, 'tipsd.barrier', '');"
}
