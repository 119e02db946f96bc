import Testing

@testable import TipsHosted

/// The erasures and compactions a ``HostedNode`` keeps (`HostedNode+Erasures.swift`, issue #44).
@Suite struct HostedNodeErasureTests {
  /// A tombstone refuses tokens issued at or before the erasure, and tokens without `iat`, while it stands; a newer
  /// token is let through; once it no longer stands it refuses nothing and is forgotten.
  @Test func aTombstoneRefusesOlderTokensWhileItStands() {
    var node = HostedNode(capacity: 4)
    node.learnErasure("alice", erasedAt: 1_000, until: 2_000)
    #expect(node.erasures.refuses("alice", issuedAt: 999, now: 1_500))
    #expect(node.erasures.refuses("alice", issuedAt: 1_000, now: 1_500))
    #expect(node.erasures.refuses("alice", issuedAt: nil, now: 1_500))
    #expect(!node.erasures.refuses("alice", issuedAt: 1_001, now: 1_500))
    #expect(!node.erasures.refuses("bob", issuedAt: nil, now: 1_500))
    #expect(node.erasures.awaitsReopening("alice", now: 1_500))
    #expect(!node.erasures.refuses("alice", issuedAt: 10, now: 2_000))
    node.expireErasures(wallNow: 1_999)
    #expect(node.erasures.tombstones["alice"] != nil)
    node.expireErasures(wallNow: 2_000)
    #expect(node.erasures.tombstones.isEmpty)
  }

  /// The newest erasure wins; an older one heard late only makes the tombstone stand longer.
  @Test func theNewestErasureWinsAndALateOlderOneExtendsIt() {
    var node = HostedNode(capacity: 4)
    node.learnErasure("alice", erasedAt: 1_000, until: 2_000)
    node.learnErasure("alice", erasedAt: 1_200, until: 2_200)
    #expect(node.erasures.tombstones["alice"] == Tombstone(erasedAt: 1_200, until: 2_200, reopened: false))
    node.learnErasure("alice", erasedAt: 900, until: 3_000, reopened: true)
    #expect(node.erasures.tombstones["alice"] == Tombstone(erasedAt: 1_200, until: 3_000, reopened: false))
    #expect(node.erasures.refuses("alice", issuedAt: 1_100, now: 2_500))
  }

  /// One reopening per account at a time. Reopened, the account is read (its waiters go on once it is idle) and its
  /// tombstone no longer keeps it from being read; failed, its waiters are refused; erased again, the tombstones are
  /// read anew.
  @Test func aReopeningRunsOnceAndItsAnswerDecidesWhatFollows() {
    var node = HostedNode(capacity: 4)
    node.learnErasure("alice", erasedAt: 1_000, until: 2_000)
    node.wait(7, on: "alice")
    #expect(node.startReopening("alice") == true)
    #expect(node.startReopening("alice") == false)
    #expect(node.reopenAnswered("alice", .reopened) == [.load("alice")])
    #expect(!node.erasures.awaitsReopening("alice", now: 1_500))
    #expect(node.erasures.refuses("alice", issuedAt: 999, now: 1_500))
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [7])])

    node.learnErasure("bob", erasedAt: 1_000, until: 2_000)
    node.wait(8, on: "bob")
    #expect(node.startReopening("bob") == true)
    #expect(node.reopenAnswered("bob", .failed) == [.failWaiters("bob", sessions: [8])])
    #expect(node.startReopening("bob") == true)

    #expect(node.startReadingErasures() == true)
    #expect(node.startReadingErasures() == false)
    node.erasuresRead([])
    #expect(node.startReadingErasures() == false)
    #expect(node.reopenAnswered("bob", .erasedAgain) == [])
    #expect(node.startReadingErasures() == true)
    node.erasuresRead(nil)
    #expect(node.startReadingErasures() == true)
    node.erasuresRead([("carol", Tombstone(erasedAt: 5, until: 10, reopened: true))])
    #expect(node.erasures.tombstones["carol"]?.reopened == true)
  }

  /// Accounts grown past the threshold are compacted in rounds of at most `limit`, in account order, one round at a
  /// time; an account compacted since far enough is skipped, and an erased one forgotten.
  @Test func compactionRoundsTakeTheDueAccountsOnce() {
    var node = HostedNode(capacity: 4)
    node.grew("a", last: 100, snapshotCursor: 50, threshold: 50)
    #expect(node.compactions.due.isEmpty)
    for account in ["d", "c", "b", "a"] { node.grew(account, last: 200, snapshotCursor: 50, threshold: 50) }
    node.grew("e", last: 300, snapshotCursor: 0, threshold: 50)
    _ = node.deleted("e")
    #expect(node.startCompaction(limit: 2, threshold: 50, snapshotCursor: { _ in nil }) == ["a", "b"])
    #expect(node.startCompaction(limit: 2, threshold: 50, snapshotCursor: { _ in nil }) == [])
    node.compactionFinished()
    // c was compacted since (its snapshot at 180): skipped, and off the list.
    #expect(node.startCompaction(limit: 2, threshold: 50, snapshotCursor: { $0 == "c" ? 180 : nil }) == ["d"])
    node.compactionFinished()
    #expect(node.compactions.due.isEmpty && !node.compactions.isRunning)
    #expect(node.startCompaction(limit: 2, threshold: 50, snapshotCursor: { _ in nil }) == [])
  }
}
