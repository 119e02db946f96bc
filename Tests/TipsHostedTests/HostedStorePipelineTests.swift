import Testing
import TipsRecords
import TipsTestSupport

@testable import TipsHosted

/// `--commit-pipeline` (#47): commits made while one is in flight wait and go together in one transaction, and a
/// later commit of an account never passes an earlier one.
@Suite struct HostedStorePipelineTests {
  typealias Harness = HostedStoreTests.Harness

  /// Four commits made back to back, the writer ready: A (alice) goes at once; B (bob) and C (alice again) wait and
  /// go together once A is answered (C's alice is after A's, which is answered); D (bob again) would pass B inside one
  /// transaction, so it waits for the next. Every account's cursors come out in the order its commits were made.
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
    // B and C in one transaction; D after it.
    #expect(harness.store.mergedCommits == 1)
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
