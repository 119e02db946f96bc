// An erased account started again by its user (#42): the tombstone refuses tokens issued before the erasure, not the
// account id, so a token issued later starts an empty account.
extension HostedStore {
  /// Marks the tombstone of `account` reopened when it was laid before `issuedAt` (a token's `iat`): pushes, history
  /// and loads store and read the account again, while the tombstone keeps refusing tokens issued before the
  /// erasure until it falls. Answers false when a standing tombstone was laid at or after `issuedAt` (nothing
  /// changed); true when the account may be stored (reopened now or before, or no tombstone stands).
  public func reopenAccount(
    _ account: String, issuedAt: Double, completion: @escaping (Result<Bool, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        UPDATE tipsd.erased SET reopened_at = now()
        WHERE account = $1 AND reopened_at IS NULL AND erased_at < to_timestamp($2::double precision)
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
