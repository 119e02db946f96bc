import TipsRecords
import TipsSync

// What a node reads from PostgreSQL may become an acknowledgement (an idempotency key's reply answers a retry; an
// account's operations are what its next replies count), so it must be on the synchronous standby before the node
// uses it (chaos seed 194691823). PostgreSQL shows a commit its standby does not have in two cases: a primary that
// restarts replays the commits that were waiting for the standby when it went down, and a backend whose wait is ended
// (`pg_terminate_backend`, as the fence does) leaves its commit in place. A node read such a row back, answered the
// client's retry from it, and the change was gone once the standby, which never had it, was promoted.
//
// A transaction that writes WAL under a transaction id commits only once the synchronous standby has the WAL up to
// its commit record — every commit the transaction saw included (a transaction id alone is not enough: PostgreSQL
// waits for the standby only when the transaction wrote WAL). A transactional logical message
// (`pg_logical_emit_message`, callable by any role, at any wal_level) is the smallest such write: a few dozen bytes,
// no table. So:
// - the reader's first statement on each connection is such a barrier: what a restarted primary replayed is on the
//   standby before the reader reads anything (while the standby is away the reader is not ready: loads and key
//   look-ups are refused with -32016, as commits wait);
// - the statements reading keys' replies write the message when they return a row (``replyBarrier``: an uncorrelated
//   subquery runs once, when the first row needs it — no row, no write), so a reply a terminated backend left behind
//   is on the standby before a node answers from it;
// - a load that ran its fence ends with the barrier.
// On a server without a synchronous standby the barrier costs one local WAL flush.

extension HostedStore {
  /// Writes a little WAL under a transaction id: the statement's transaction commits once the WAL up to now is on
  /// the synchronous standby.
  static let durabilityBarrier = "SELECT pg_logical_emit_message(true, 'tipsd.barrier', '')"

  /// A select-list column that writes the barrier's message once, when the statement returns its first row.
  static let replyBarrier = "(SELECT pg_logical_emit_message(true, 'tipsd.barrier', '')) IS NOT NULL"
}

extension HostedStore {
  /// A row of `SELECT key, reply, at, <replyBarrier> FROM tipsd.idempotency` (a load's and ``replies(of:since:)``'s).
  static func idempotentReply(_ row: [String?]) -> IdempotentReply? {
    guard row.count == 4, let key = row[0], let reply = row[1], let at = row[2].flatMap({ Double($0) }) else {
      return nil
    }
    return IdempotentReply(key: key, result: Array(reply.utf8), at: at)
  }
}
