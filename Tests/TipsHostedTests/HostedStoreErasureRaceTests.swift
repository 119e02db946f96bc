import Foundation
import Testing
import TipsRecords
import TipsTestSupport

@testable import TipsHosted

/// An erasure racing another node's commit of the same account (schema 16): whichever began first, once both ended
/// nothing of the account is left but its tombstone and its marked row. Two stores share a real PostgreSQL; a `psql`
/// session holding a lock stops one of them at the point where the other then runs into it, so each interleaving
/// happens every time, not by chance.
@Suite struct HostedStoreErasureRaceTests {
  typealias Harness = HostedStoreTests.Harness

  final class Race {
    let postgres: PostgresServer
    /// The node whose admin erases the account.
    let eraser: Harness
    /// Another node, committing the account's changes.
    let committer: Harness

    init() throws {
      postgres = try PostgresServer()
      eraser = try Harness(postgres: postgres, node: "node-a")
      committer = try Harness(postgres: postgres, node: "node-b")
    }

    func stop() {
      eraser.store.stop()
      committer.store.stop()
      postgres.destroy()
    }

    /// Runs both nodes' loops until `condition` holds.
    @discardableResult
    func spin(until condition: () -> Bool) -> Bool {
      waitUntil {
        for harness in [eraser, committer] {
          harness.loop.run()
          harness.loop.advance(by: 5)
        }
        return condition()
      }
    }

    /// Both nodes' writers are connected.
    func ready() {
      #expect(spin { eraser.store.isWritable && committer.store.isWritable })
    }

    /// Both nodes ready, and eve's first operation stored (cursor 1) by the committing node.
    func storeEve() {
      ready()
      var first: HostedStore.Committed?
      commitEve(seq: 1) { first = $0 }
      #expect(spin { first != nil })
      #expect(first?.lastCursor == 1)
    }

    /// A `psql` session holding what `sql` locks in an open transaction, once it ran.
    func hold(_ sql: String) throws -> PostgresServer.Session {
      let holder = try postgres.session("BEGIN; " + sql)
      #expect(
        waitUntil {
          (try? postgres.query("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'")) == "1\n"
        })
      return holder
    }

    /// Backends waiting for a lock.
    func waiting() -> Int {
      Int((try? postgres.query("SELECT count(*) FROM pg_locks WHERE NOT granted"))?.trimmingLastNewline ?? "") ?? 0
    }

    func count(_ table: String) throws -> String {
      try postgres.query("SELECT count(*) FROM tipsd.\(table) WHERE account = 'eve'")
    }

    func commitEve(seq: Int64, answer: @escaping (HostedStore.Committed?) -> Void) {
      let chunk = HostedStore.HistoryChunk(count: 1, firstAt: 10, lastAt: 10, bytes: [UInt8(seq)])
      committer.store.commit(
        [
          HostedStore.AccountChanges(
            account: "eve", operations: [PendingOperation(seq: seq, payload: "{}")], history: [chunk],
            replies: [IdempotentReply(key: "k\(seq)", result: Array("{}".utf8), at: 1)]),
          HostedStore.AccountChanges(
            account: "zoe-\(seq)", operations: [PendingOperation(seq: 1, payload: "{}")], history: []),
        ]
      ) { result in answer((try? result.get())?["eve"]) }
    }

    /// Every row of eve's is gone but the tombstone and the marked account row.
    func expectErased() throws {
      for table in ["ops", "history", "idempotency", "snapshots", "devices"] {
        #expect(try count(table) == "0\n", "tipsd.\(table) keeps rows of the erased account")
      }
      #expect(try postgres.query("SELECT erased, last_cursor FROM tipsd.accounts WHERE account = 'eve'") == "t|0\n")
      let loaded = try eraser.await { eraser.store.load("eve", completion: $0) }
      #expect(loaded.erased && loaded.operations.isEmpty)
    }
  }

  /// The erasure holds the account's row (it is stopped at its deletion of the operations); another node's commit
  /// of the account then waits for it, and stores nothing once the erasure committed: its statement saw no tombstone,
  /// but the row's newest version carries the mark. The other account of that commit is stored as usual.
  @Test func aCommitWaitingForAnErasureStoresNothing() throws {
    let race = try Race()
    defer { race.stop() }
    race.storeEve()

    let holder = try race.hold("SELECT 1 FROM tipsd.ops WHERE account = 'eve' FOR UPDATE;")
    defer { holder.release() }
    var erased: Result<Void, HostedError>?
    race.eraser.store.deleteAccount("eve", erasureDays: 30) { erased = $0 }
    #expect(race.spin { race.waiting() == 1 })
    var late: HostedStore.Committed?
    var lateAnswered = false
    race.commitEve(seq: 2) {
      late = $0
      lateAnswered = true
    }
    // The commit waits for the erasure (before schema 16 it went through at once, storing operation 2 for good).
    #expect(race.spin { race.waiting() == 2 || lateAnswered })
    #expect(!lateAnswered)
    holder.release()
    #expect(race.spin { erased != nil && lateAnswered })
    #expect((try? erased?.get()) != nil)
    #expect(late?.erased == true)
    #expect(late?.lastCursor == -1)
    try race.expectErased()
    #expect(try race.postgres.query("SELECT last_cursor FROM tipsd.accounts WHERE account = 'zoe-2'") == "1\n")
  }

  /// Another node's commit holds the account's row (it is stopped at its insert of an operation whose key a held
  /// transaction took); the erasure then waits for it, and deletes what it stored once it committed.
  @Test func anErasureWaitingForACommitErasesWhatItStored() throws {
    let race = try Race()
    defer { race.stop() }
    race.storeEve()

    // The next commit's operation will be eve's cursor 2: a held transaction takes that key first.
    let holder = try race.hold(
      "INSERT INTO tipsd.ops (account, cursor, device, seq, op) VALUES ('eve', 2, 'held', 1, '{}');")
    defer { holder.release() }
    var late: HostedStore.Committed?
    var lateAnswered = false
    race.commitEve(seq: 2) {
      late = $0
      lateAnswered = true
    }
    #expect(race.spin { race.waiting() == 1 })
    var erased: Result<Void, HostedError>?
    race.eraser.store.deleteAccount("eve", erasureDays: 30) { erased = $0 }
    // The erasure waits for the commit holding eve's row (before schema 16 it deleted the operations it could see
    // and waited only at the end, for the row itself).
    #expect(race.spin { race.waiting() == 2 || erased != nil })
    #expect(erased == nil)
    holder.release()
    #expect(race.spin { erased != nil && lateAnswered })
    #expect((try? erased?.get()) != nil)
    // The commit was stored before the erasure took the row, and the erasure took it away.
    #expect(late?.lastCursor == 2)
    try race.expectErased()
  }

  /// After the erasure a commit of the account through `tipsd.commit` (the fallback, devices' pushes) finds the mark
  /// too, and takes back the replies it inserted; a user who signs in again with a token issued later reopens the
  /// account, which clears the mark and deletes whatever a write that never met it left: the account stores again,
  /// empty, from cursor 1. A fallen tombstone sweeps the same way.
  @Test func theMarkHoldsForEachAccountCommitsAndAReopeningClearsIt() throws {
    let race = try Race()
    defer { race.stop() }
    race.ready()
    try race.eraser.await { race.eraser.store.deleteAccount("eve", erasureDays: 30, completion: $0) }
    // A commit whose tombstone check ran before the erasure committed: only the row's mark can stop it.
    #expect(
      try race.postgres.query(
        """
        SELECT erased, last_cursor FROM tipsd.commit('eve', 'node-b', 'c', '{5}', '{"{}"}', '{1}', '{1}', '{1}',
          '{"\\\\x01"}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')
        """) == "t|\n")
    try race.postgres.query("UPDATE tipsd.erased SET reopened_at = now()")
    // The tombstone reopened by hand, the mark still on the row: the row decides.
    #expect(
      try race.postgres.query(
        """
        SELECT erased FROM tipsd.commit('eve', 'node-b', 'c', '{}', '{}', '{}', '{}', '{}', '{}', '{k}', '{"{}"}',
          '{1}', '{}', '{}', '{}', '{}')
        """) == "t\n")
    #expect(try race.count("idempotency") == "0\n")
    #expect(try race.count("ops") == "0\n")
    try race.postgres.query("UPDATE tipsd.erased SET reopened_at = NULL")

    // What a write that never met the mark leaves (a node of an earlier build racing the erasure, a device's pull):
    // the account started again never sees it — the reopening deletes it with the mark.
    try race.postgres.query(
      """
      INSERT INTO tipsd.ops (account, cursor, device, seq, op) VALUES ('eve', 7, 'old-node', 7, '{}');
      INSERT INTO tipsd.devices (account, device, cursor) VALUES ('eve', 'phone', 7);
      UPDATE tipsd.accounts SET last_cursor = 7 WHERE account = 'eve'
      """)
    let reopened = try race.eraser.await {
      race.eraser.store.reopenAccount("eve", issuedAt: Date().timeIntervalSince1970 + 5, completion: $0)
    }
    #expect(reopened)
    #expect(try race.postgres.query("SELECT erased, last_cursor FROM tipsd.accounts WHERE account = 'eve'") == "f|0\n")
    for table in ["ops", "devices", "idempotency", "history"] {
      #expect(try race.count(table) == "0\n", "tipsd.\(table) keeps rows of the erased era")
    }
    let loaded = try race.eraser.await { race.eraser.store.load("eve", completion: $0) }
    #expect(!loaded.erased && loaded.operations.isEmpty)
    var again: HostedStore.Committed?
    race.commitEve(seq: 3) { again = $0 }
    #expect(race.spin { again != nil })
    #expect(again?.lastCursor == 1 && again?.erased == false)

    // A tombstone that falls takes its marked row and any such leftover with it.
    try race.eraser.await { race.eraser.store.deleteAccount("zoe-3", erasureDays: 30, completion: $0) }
    try race.postgres.query(
      """
      INSERT INTO tipsd.ops (account, cursor, device, seq, op) VALUES ('zoe-3', 9, 'old-node', 9, '{}');
      UPDATE tipsd.erased SET until = now() - interval '1 second' WHERE account = 'zoe-3'
      """)
    #expect(try race.eraser.await { race.eraser.store.pruneErased(completion: $0) } == 1)
    for table in ["accounts", "ops", "erased"] {
      let left = try race.postgres.query("SELECT count(*) FROM tipsd.\(table) WHERE account = 'zoe-3'")
      #expect(left == "0\n", "tipsd.\(table)")
    }
  }
}

extension String {
  fileprivate var trimmingLastNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
