import Testing
import TipsRecords
import TipsTestSupport

@testable import TipsHosted

/// `--commit-pipeline` (#47): commits made while one is in flight wait and go together in one transaction, an
/// account in several of them with its parts joined in the order made, and each commit answered for its own part.
@Suite struct HostedStorePipelineTests {
  typealias Harness = HostedStoreTests.Harness

  /// Four commits made back to back, the writer ready: A (alice) goes at once; B (bob), C (alice again) and D (bob
  /// again) wait and go together once A is answered, bob's two parts joined. Every account's cursors come out in the
  /// order its commits were made, and each commit is answered its own.
  @Test(arguments: [true, false]) func waitingCommitsGoTogetherInOrder(setBased: Bool) throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres, setBased: setBased, pipeline: 1)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable && harness.store.isReadable && harness.store.isListening })

    func changes(_ account: String, seq: Int64) -> [HostedStore.AccountChanges] {
      [
        HostedStore.AccountChanges(
          account: account, operations: [PendingOperation(seq: seq, payload: "{}")], history: [])
      ]
    }
    var answered: [(String, HostedStore.Committed?)] = []
    let made = [
      ("A", changes("alice", seq: 1)), ("B", changes("bob", seq: 1)), ("C", changes("alice", seq: 2)),
      ("D", changes("bob", seq: 2)),
    ]
    for (name, commit) in made {
      harness.store.commit(commit) { result in
        let account = commit[0].account
        answered.append((name, try? result.get()[account]))
      }
    }
    #expect(harness.store.commitTransactionsInFlight == 1)
    #expect(harness.store.queuedCommits.count == 3)
    #expect(harness.spin { answered.count == 4 })
    #expect(answered.map(\.0) == ["A", "B", "C", "D"])
    #expect(answered.map { $0.1?.lastCursor } == [1, 1, 2, 2])
    // B, C and D in one transaction.
    #expect(harness.store.mergedCommits == 2)
    #expect(harness.store.commitTransactionsInFlight == 0)
    let rows = try harness.postgres.query(
      "SELECT string_agg(account || ':' || cursor || ':' || seq, ' ' ORDER BY account, cursor) FROM tipsd.ops")
    #expect(rows == "alice:1:1 alice:2:2 bob:1:1 bob:2:2\n")
  }

  /// With room for two, the second commit goes at once, pipelined behind the first, and nothing is merged.
  @Test func aWiderPipelineSendsAtOnce() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    let harness = try Harness(postgres: postgres, pipeline: 2)
    defer { harness.store.stop() }
    #expect(harness.spin { harness.store.isWritable })
    var answered = 0
    for account in ["alice", "bob", "carol"] {
      harness.store.commit(
        [
          HostedStore.AccountChanges(
            account: account, operations: [PendingOperation(seq: 1, payload: "{}")], history: [])
        ]
      ) { result in if (try? result.get()[account]?.lastCursor) == 1 { answered += 1 } }
    }
    #expect(harness.store.commitTransactionsInFlight == 2)
    #expect(harness.store.queuedCommits.count == 1)
    #expect(harness.spin { answered == 3 })
    #expect(harness.store.mergedCommits == 0)
  }
}

/// How a joined transaction's answer is shared out between the commits in it.
@Suite struct CommitPartsTests {
  typealias Committed = HostedStore.Committed

  func commit(_ account: String, ops: Int, chunks: Int) -> HostedStore.QueuedCommit {
    let chunk = HostedStore.HistoryChunk(count: 1, firstAt: 1, lastAt: 1, bytes: [1])
    return HostedStore.QueuedCommit(
      changes: [
        HostedStore.AccountChanges(
          account: account, operations: (0..<ops).map { PendingOperation(seq: Int64($0 + 1), payload: "{}") },
          history: Array(repeating: chunk, count: chunks))
      ], completion: { _ in })
  }

  @Test func eachCommitGetsItsOperationsAndChunks() {
    // alice: 2 ops and 1 chunk, then 0 ops and 2 chunks, then 3 ops and none; the transaction stored cursors 11..15
    // and chunks at 7, 8, 9.
    let group = [
      commit("alice", ops: 2, chunks: 1), commit("alice", ops: 0, chunks: 2), commit("alice", ops: 3, chunks: 0),
    ]
    let parts = HostedStore.parts(of: ["alice": Committed(lastCursor: 15, historyFirst: [7, 8, 9])], for: group)
    #expect(
      parts.map { $0["alice"] } == [
        Committed(lastCursor: 12, historyFirst: [7]), Committed(lastCursor: nil, historyFirst: [8, 9]),
        Committed(lastCursor: 15, historyFirst: []),
      ])
  }

  @Test func aRefusalOrAnErasureIsEveryParts() {
    let group = [commit("bob", ops: 1, chunks: 1), commit("bob", ops: 0, chunks: 1)]
    var refused = Committed(lastCursor: nil, historyFirst: [])
    refused.refused = "idempotency key k was used on another node first"
    refused.firstReplies = ["k": [1]]
    #expect(HostedStore.parts(of: ["bob": refused], for: group).map { $0["bob"] } == [refused, refused])
    let erased = HostedStore.parts(of: ["bob": Committed(lastCursor: -1, historyFirst: [-1, -1])], for: group)
    #expect(
      erased.map { $0["bob"] } == [
        Committed(lastCursor: -1, historyFirst: [-1]), Committed(lastCursor: nil, historyFirst: [-1]),
      ])
    #expect(erased.allSatisfy { $0["bob"]?.erased == true })
  }
}
