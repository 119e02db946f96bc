import Testing
import TipsRecords
import TipsSync
import TipsTestSupport

@testable import TipsHosted

/// The set-based statement with many accounts of different shapes in one commit: each account's cursors are its own
/// (the statement gathers them by `GROUP BY`), whatever the accounts around it hold.
@Suite struct HostedStoreSetCommitTests {
  @Test func manyAccountsOfMixedShapesGetTheirOwnCursors() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try HostedStoreTests.Harness(postgres: postgres)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable })
    // Account i: i % 3 operations and i % 4 history chunks of i % 5 + 1 entries each (some with neither).
    let shapes = (0..<40).map { i in (account: "acct-\(i)", ops: i % 3, chunks: i % 4, entries: i % 5 + 1) }
    func changes(round: Int64) -> [HostedStore.AccountChanges] {
      shapes.map { shape in
        let operations: [PendingOperation] = (0..<shape.ops).map { k in
          PendingOperation(seq: round * 10 + Int64(k) + 1, payload: "{\"k\":\(k)}")
        }
        let chunk = HostedStore.HistoryChunk(
          count: shape.entries, firstAt: 1, lastAt: 2, bytes: [UInt8](repeating: 7, count: shape.entries))
        return HostedStore.AccountChanges(
          account: shape.account, operations: operations,
          history: [HostedStore.HistoryChunk](repeating: chunk, count: shape.chunks))
      }
    }
    func commit(round: Int64) throws -> [String: HostedStore.Committed] {
      let turn = changes(round: round)
      return try harness.await { completion in harness.store.commit(turn, completion: completion) }
    }
    for round: Int64 in 0..<2 {
      let answers = try commit(round: round)
      for shape in shapes where shape.ops > 0 || shape.chunks > 0 {
        let answer = try #require(answers[shape.account])
        #expect(answer.lastCursor == (shape.ops > 0 ? Int64(shape.ops) * (round + 1) : nil), "\(shape.account)")
        // Each chunk's first cursor, after the round before's chunks.
        let before = Int64(shape.chunks * shape.entries) * round
        let firsts = (0..<shape.chunks).map { before + Int64($0 * shape.entries) + 1 }
        #expect(answer.historyFirst == firsts, "\(shape.account)")
      }
    }
    // Every round went through the one set-based statement.
    #expect(harness.store.commitCounts == (0, 2))
    #expect(
      try postgres.query("SELECT count(*), sum(count) FROM tipsd.history")
        == "\(2 * shapes.map(\.chunks).reduce(0, +))|\(2 * shapes.map { $0.chunks * $0.entries }.reduce(0, +))\n")
  }
}
