// Schema 16: an erasure that no commit in flight can outlive.

extension PGSchema {
  /// Version 16 makes an erasure final against commits racing it. Before, `DELETE`s of the account's rows ran first
  /// and its `tipsd.accounts` row was deleted last, so two interleavings left rows behind for good:
  ///
  /// - a commit of another node that had bumped the account's cursor (holding its row lock, not yet committed) when
  ///   the erasure began: the erasure's `DELETE`s never saw its operations, then waited for the row lock and deleted
  ///   only the row;
  /// - a commit that reached the account's row after the erasure had deleted it: its upsert made a new row, and the
  ///   erasure's tombstone, committed after the commit's statement began, was not in that statement's snapshot.
  ///
  /// Now the erasure marks the row (`tipsd.accounts.erased`, cursors back to 0) before it deletes anything: the mark
  /// waits for a commit holding the row, and the `DELETE`s after it (each with a snapshot of its own) see what that
  /// commit stored. The row stays, marked, while the tombstone stands: a commit reaching it later takes its lock and
  /// finds the mark on the row's newest version, whatever its snapshot — the set-based statement's upsert does not
  /// bump a marked row (which fails the statement: the node commits each account alone), `tipsd.push`,
  /// `tipsd.append_history` and `tipsd.commit` answer erased (`tipsd.commit` taking back the replies it inserted).
  /// A reopened tombstone, an import and a fallen tombstone clear the mark (the last deletes the row); the first and
  /// the last delete anything stored meanwhile by a write that never met the mark (``sweep(_:)``). An account erased
  /// before this version has its marked row made by the migration while its tombstone stands.
  static let erasureMark = """
        ALTER TABLE tipsd.accounts ADD COLUMN erased boolean NOT NULL DEFAULT false;
        INSERT INTO tipsd.accounts (account, erased)
          SELECT account, true FROM tipsd.erased WHERE until > now() AND reopened_at IS NULL
          ON CONFLICT (account) DO UPDATE SET erased = true;
    """

  /// `$1` account: the erasure's mark (see ``erasureMark``), the first thing an erasure does after its tombstone.
  package static let markErased = """
    INSERT INTO tipsd.accounts AS a (account, erased) VALUES ($1, true)
    ON CONFLICT (account) DO UPDATE SET erased = true, last_cursor = 0, history_cursor = 0, ops_floor = 0
    """

  /// Data-modifying CTEs deleting every row the accounts of CTE `accounts` (its column `account`) have in the account
  /// tables: what their erasure deleted, and anything a write racing it stored afterwards without meeting the mark
  /// (a node of an earlier build, a device's pull). A reopening and a fallen tombstone run it for the marked rows
  /// they clear, so such a row can never come back to the account started again.
  package static func sweep(_ accounts: String) -> String {
    ["ops", "history", "idempotency", "devices", "snapshots"].map { table in
      "swept_\(table) AS (DELETE FROM tipsd.\(table) t USING \(accounts) s WHERE t.account = s.account)"
    }.joined(separator: ",\n")
  }
}
