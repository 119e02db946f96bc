import TipsSync

// Erasure (#42, schema 16): every row of an account deleted in one transaction that no commit of another node racing
// it can outlive, its tombstone, and an erased account started again by its user — the tombstone refuses tokens
// issued before the erasure, not the account id, so a token issued later starts an empty account.
extension HostedStore {
  /// Erases every row of `account` in one transaction, leaves its tombstone for `erasureDays` (until then nothing
  /// is stored for it again: pushes and history appends in flight are dropped, sign-ins and loads refused) and
  /// notifies the fleet (every node drops it from memory and closes its sessions). Its `tipsd.accounts` row stays,
  /// marked erased with its cursors at 0, while the tombstone stands (schema 16, ``PGSchema/erasureMark``): a commit
  /// of another node racing the erasure is erased with the rest or stores nothing.
  public func deleteAccount(
    _ account: String, erasureDays: Double, completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        INSERT INTO tipsd.erased (account, until) VALUES ($1, now() + $2::double precision * interval '1 day')
        ON CONFLICT (account) DO UPDATE SET erased_at = now(), until = excluded.until, reopened_at = NULL
        """, [account, "\(erasureDays)"]),
      // The mark before any row goes (schema 16): it waits for a commit holding the account's row, so the deletions
      // after it see what that commit stored, and a commit reaching the row later finds the mark and stores nothing.
      .query(PGSchema.markErased, [account]),
      .query("DELETE FROM tipsd.ops WHERE account = $1", [account]),
      .query("DELETE FROM tipsd.idempotency WHERE account = $1", [account]),
      .query("DELETE FROM tipsd.devices WHERE account = $1", [account]),
      .query("DELETE FROM tipsd.history WHERE account = $1", [account]),
      .query("DELETE FROM tipsd.snapshots WHERE account = $1", [account]),
      .query("SELECT pg_notify($1, $2)", [PGSchema.fleetChannel, "deleted " + account]),
      AuditEntry.accountChange("account.delete", account),
      Self.webhookEvent(
        app: AccountKey.app(of: account), type: "account.deleted", data: Self.accountDeletedData(account)),
    ]) { completion($0.map { _ in () }) }
  }

  /// Deletes tombstones that have fallen; returns how many.
  public func pruneErased(completion: @escaping (Result<Int, HostedError>) -> Void) {
    // A fallen tombstone's marked row goes with it, and whatever a racing write left (schema 16, PGSchema.sweep); a
    // reopened account's mark was cleared already.
    writer.send([
      .query(
        """
        WITH gone AS (DELETE FROM tipsd.erased WHERE until <= now() RETURNING account),
        unmarked AS (
          DELETE FROM tipsd.accounts a USING gone g WHERE a.account = g.account AND a.erased RETURNING a.account),
        \(PGSchema.sweep("unmarked"))
        SELECT count(*) FROM gone
        """)
    ]) { result in
      completion(result.map { Int($0.first?.rows.first?.first.flatMap { $0 } ?? "0") ?? 0 })
    }
  }

  /// Marks the tombstone of `account` reopened when it was laid before `issuedAt` (a token's `iat`), clearing the
  /// erasure's mark on its row in the same statement and deleting anything a write racing the erasure left
  /// (schema 16, ``PGSchema/sweep(_:)``): pushes, history and loads store and read the account again, empty, while
  /// the tombstone keeps refusing tokens issued before the erasure until it falls. Answers false when a standing
  /// tombstone was laid at or after `issuedAt` (nothing changed); true when the account may be stored (reopened now
  /// or before, or no tombstone stands).
  public func reopenAccount(
    _ account: String, issuedAt: Double, completion: @escaping (Result<Bool, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        WITH reopened AS (
          UPDATE tipsd.erased SET reopened_at = now()
          WHERE account = $1 AND reopened_at IS NULL AND erased_at < to_timestamp($2::double precision)
          RETURNING account),
        unmarked AS (
          UPDATE tipsd.accounts a SET erased = false, last_cursor = 0, history_cursor = 0, ops_floor = 0
          FROM reopened r WHERE a.account = r.account AND a.erased RETURNING a.account),
        \(PGSchema.sweep("unmarked"))
        SELECT count(*) FROM unmarked
        """, [account, "\(issuedAt)"]),
      .query(
        "SELECT count(*) FROM tipsd.erased WHERE account = $1 AND until > now() AND reopened_at IS NULL", [account]),
    ]) { result in
      completion(result.map { results in (results.last?.rows.first?.first.flatMap { $0 } ?? "0") == "0" })
    }
  }

  /// Accounts whose tombstone stands (``ErasedAccount``).
  public func erasedAccounts(completion: @escaping (Result<[ErasedAccount], HostedError>) -> Void) {
    reader.send([
      .query(
        """
        SELECT account, extract(epoch FROM until)::double precision, extract(epoch FROM erased_at)::double precision,
          reopened_at IS NOT NULL FROM tipsd.erased WHERE until > now()
        """)
    ]) { result in
      completion(
        result.map { results in
          (results.first?.rows ?? []).compactMap { row in
            guard row.count == 4, let account = row[0], let until = row[1].flatMap({ Double($0) }),
              let erasedAt = row[2].flatMap({ Double($0) })
            else { return nil }
            return (account, until, erasedAt, row[3] == "t")
          }
        })
    }
  }
}
