import TipsJSON
public import TipsLogging
public import TipsRecords
public import TipsSync
public import TipsTransport

/// The history's reads and pruning (split from HostedStore.swift).
extension HostedStore {
  /// The history chunks of `account` holding cursors after `cursor`, at most `limit` chunks, in cursor order.
  public func history(
    _ account: String, after cursor: Int64, limit: Int,
    completion: @escaping (Result<[StoredHistory], HostedError>) -> Void
  ) {
    reader.send([.prepared(Statement.readHistory, [account, String(cursor), String(limit)])]) { result in
      completion(
        result.map { results in
          (results.first?.rows ?? []).compactMap { row in
            guard row.count == 3, let cursor = row[0].flatMap({ Int64($0) }), let count = row[1].flatMap({ Int($0) }),
              let bytes = row[2].flatMap(Hex.decodeBytea)
            else { return nil }
            return StoredHistory(cursor: cursor, count: count, bytes: bytes)
          }
        })
    }
  }

  /// One stored history chunk in the fleet's order: its account, its position (`seq`, the first entry's) and its
  /// entries (relative to the account's `cursor`).
  public struct FleetHistory: Sendable, Equatable {
    public var seq: Int64
    public var account: String
    public var cursor: Int64
    public var count: Int
    public var bytes: [UInt8]
    /// The instant of its oldest entry.
    public var firstAt: Double = 0
  }

  /// History chunks of every account holding positions after `seq`, in the fleet's order, at most `limit` chunks.
  /// Places what committed since the last read first (`tipsd.sequence_history`): commits never take the fleet's row.
  public func fleetHistory(
    after seq: Int64, limit: Int, completion: @escaping (Result<[FleetHistory], HostedError>) -> Void
  ) {
    reader.send([
      .query(PGSchema.sequenceHistory, ["10000"]),
      .query(
        """
        SELECT seq, account, cursor, count, entries FROM tipsd.history WHERE seq + count - 1 > $1::bigint
        ORDER BY seq LIMIT $2::integer
        """, [String(seq), String(limit)]),
    ]) { result in
      completion(
        result.map { results in
          (results.dropFirst().first?.rows ?? []).compactMap { row in
            guard row.count == 5, let seq = row[0].flatMap({ Int64($0) }), let account = row[1],
              let cursor = row[2].flatMap({ Int64($0) }), let count = row[3].flatMap({ Int($0) }),
              let bytes = row[4].flatMap(Hex.decodeBytea)
            else { return nil }
            return FleetHistory(seq: seq, account: account, cursor: cursor, count: count, bytes: bytes)
          }
        })
    }
  }

  /// Every account's history chunks after (`account`, `cursor`) in account order, then cursor order, at most `limit`
  /// chunks: the fleet's metrics read every account's history one page at a time (the primary key's order).
  public func historyByAccount(
    after account: String, cursor: Int64, limit: Int,
    completion: @escaping (Result<[FleetHistory], HostedError>) -> Void
  ) {
    reader.send([
      .query(
        """
        SELECT coalesce(seq, 0), account, cursor, count, entries, first_at FROM tipsd.history
        WHERE (account, cursor) > ($1, $2::bigint) ORDER BY account, cursor LIMIT $3::integer
        """, [account, String(cursor), String(limit)])
    ]) { result in
      completion(
        result.map { results in
          (results.first?.rows ?? []).compactMap { row in
            guard row.count == 6, let seq = row[0].flatMap({ Int64($0) }), let account = row[1],
              let cursor = row[2].flatMap({ Int64($0) }), let count = row[3].flatMap({ Int($0) }),
              let bytes = row[4].flatMap(Hex.decodeBytea), let firstAt = row[5].flatMap({ Double($0) })
            else { return nil }
            return FleetHistory(
              seq: seq, account: account, cursor: cursor, count: count, bytes: bytes, firstAt: firstAt)
          }
        })
    }
  }

  /// The fleet's newest history position (0 when there is none), every chunk committed so far placed first (an
  /// admin subscribing from the head gets what is committed after it, not a backlog placed later).
  public func fleetHistoryHead(completion: @escaping (Result<Int64, HostedError>) -> Void) {
    reader.send([.query(PGSchema.sequenceHistory, ["2147483647"])]) { result in
      completion(result.map { Int64($0.first?.rows.first?.first.flatMap { $0 } ?? "0") ?? 0 })
    }
  }

  /// The account's history bounds: its oldest kept cursor and the oldest instant (nil when it keeps none).
  public func historyBounds(
    _ account: String, completion: @escaping (Result<(oldestCursor: Int64?, oldestAt: Double?), HostedError>) -> Void
  ) {
    reader.send([
      .query("SELECT min(cursor), min(first_at) FROM tipsd.history WHERE account = $1", [account])
    ]) { result in
      completion(
        result.map { results in
          let row = results.first?.rows.first
          return (row?[0].flatMap { Int64($0) }, row?[1].flatMap { Double($0) })
        })
    }
  }

  /// Deletes history chunks whose newest entry is older than `cutoff` (seconds), at most `limit` of them (the node's
  /// housekeeping calls it again while it deletes that many). Returns how many went.
  public func pruneHistory(
    before cutoff: Double, limit: Int, completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        WITH gone AS (
          DELETE FROM tipsd.history WHERE ctid IN (
            SELECT ctid FROM tipsd.history WHERE last_at < $1::double precision LIMIT $2::integer)
          RETURNING 1)
        SELECT count(*) FROM gone
        """, [cutoff.isFinite ? "\(cutoff)" : "Infinity", String(limit)])
    ]) { result in
      completion(result.map { results in results.first?.rows.first?.first?.flatMap { Int($0) } ?? 0 })
    }
  }
}
