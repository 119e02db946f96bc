import Testing

@testable import TipsHosted

@Suite struct HostedNodeTests {
  @Test func aBurstOfFirstRequestsLoadsOnce() {
    var node = HostedNode(capacity: 10)
    #expect(node.need("alice") == [.load("alice")])
    #expect(node.need("alice") == [] && node.need("alice") == [])
    #expect(node.phase(of: "alice") == .loading && !node.isIdle("alice"))
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [])])
    #expect(node.isIdle("alice"))
    #expect(node.need("alice") == [])
  }

  /// A failed read orphans the account: its waiters are answered, requests are refused at once (with the reason)
  /// until its backoff passes — 1 s, doubling with each failure in a row — then the next request reads it again.
  @Test func aFailedLoadOrphansTheAccountAndTheNextRequestAfterItsBackoffTriesAgain() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice", now: 100)
    let failed = node.loaded("alice", success: false, reason: "reader down", now: 100)
    #expect(failed == [.failWaiters("alice", sessions: [])])
    #expect(node.phase(of: "alice") == .orphaned && node.failure(of: "alice") == "reader down")
    #expect(node.need("alice", now: 100.5) == [] && node.phase(of: "alice") == .orphaned)
    #expect(node.need("alice", now: 101) == [.load("alice")])
    #expect(node.phase(of: "alice") == .reloading)
    _ = node.loaded("alice", success: false, reason: "still down", now: 101)
    // The second failure in a row waits 2 s.
    #expect(node.need("alice", now: 102.5) == [])
    #expect(node.need("alice", now: 103) == [.load("alice")])
    #expect(node.loaded("alice", success: true, now: 103) == [.resume("alice", sessions: [])])
    #expect(node.failure(of: "alice") == nil)
    // A success starts the backoff over.
    node.committing("alice")
    _ = node.committed("alice", success: false)
    _ = node.loaded("alice", success: false, now: 200)
    #expect(node.need("alice", now: 201) == [.load("alice")])
  }

  /// An orphaned account with sessions is read again by the housekeeping's tick once its backoff passed and
  /// PostgreSQL can be read (at once when the reader comes back); one without sessions is dropped there.
  @Test func tickReadsOrphansWithSessionsAgainAndDropsTheRest() {
    var node = HostedNode(capacity: 10)
    node.sessionOpened("alice")
    _ = node.need("alice", now: 10)
    _ = node.need("bob", now: 10)
    _ = node.loaded("alice", success: false, now: 10)
    _ = node.loaded("bob", success: false, now: 10)
    #expect(node.tick(now: 10.5, readable: true) == [])
    #expect(node.tick(now: 11, readable: false) == [])
    #expect(node.tick(now: 11, readable: true) == [.load("alice"), .evict("bob")])
    #expect(node.phase(of: "alice") == .reloading && node.phase(of: "bob") == nil)
    _ = node.loaded("alice", success: false, now: 11)
    node.readerUp()
    #expect(node.tick(now: 11, readable: true) == [.load("alice")])
    // A notice for an orphaned account pulls nothing (its read reads everything); nor is it committed.
    _ = node.loaded("alice", success: false, now: 11)
    #expect(node.othersWrote("alice") == [])
    node.committing("alice")
    #expect(node.phase(of: "alice") == .orphaned)
  }

  /// A failed pull is tried again after its backoff (1 s, doubling), by the tick; a success starts it over.
  @Test func aFailedPullIsRetriedByTheTickAfterItsBackoff() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice", now: 0)
    _ = node.loaded("alice", success: true, now: 0)
    #expect(node.othersWrote("alice") == [.pull("alice")])
    #expect(node.pulled("alice", success: false, now: 5) == [.resume("alice", sessions: [])])
    #expect(node.pullRetry(of: "alice") == 6)
    #expect(node.tick(now: 5.5, readable: true) == [])
    #expect(node.tick(now: 6, readable: true) == [.pull("alice")])
    #expect(node.pulled("alice", success: false, now: 6) == [.resume("alice", sessions: [])])
    #expect(node.pullRetry(of: "alice") == 8)
    // A notice before the retry pulls at once, and the retry is dropped.
    #expect(node.othersWrote("alice") == [.pull("alice")])
    #expect(node.pullRetry(of: "alice") == nil)
    #expect(node.pulled("alice", success: true, now: 7) == [.resume("alice", sessions: [])])
    #expect(node.othersWrote("alice") == [.pull("alice")])
    _ = node.pulled("alice", success: false, now: 9)
    #expect(node.pullRetry(of: "alice") == 10)
  }

  /// The sessions waiting for an account are the machine's: released by the action that ends the wait, in the order
  /// they came, each once; a closed session is forgotten; an erasure takes them (to answer or re-park them).
  @Test func waitersAreReleasedOnceInOrderByTheActionThatEndsTheWait() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice")
    node.wait(3, on: "alice")
    node.wait(1, on: "alice")
    node.wait(2, on: "alice")
    node.wait(3, on: "alice")  // already waiting: once
    node.sessionGone(1)
    #expect(node.waiters(of: "alice") == [3, 2] && node.account(awaitedBy: 2) == "alice")
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [3, 2])])
    #expect(node.waiters(of: "alice").isEmpty && node.account(awaitedBy: 3) == nil)
    node.committing("alice")
    node.wait(4, on: "alice")
    _ = node.committed("alice", success: false)
    #expect(node.loaded("alice", success: false, reason: "down") == [.failWaiters("alice", sessions: [4])])
    _ = node.need("bob")
    node.wait(5, on: "bob")
    #expect(node.deleted("bob") == [.evict("bob")])
    #expect(node.takeWaiters(of: "bob") == [5] && node.takeWaiters(of: "bob").isEmpty)
  }

  @Test func requestsWaitWhileCommittingAndAFailedCommitReloads() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice")
    _ = node.loaded("alice", success: true)
    node.committing("alice")
    #expect(!node.isIdle("alice"))
    #expect(node.committed("alice", success: true) == [.resume("alice", sessions: [])])
    node.committing("alice")
    #expect(node.committed("alice", success: false) == [.load("alice")])
    #expect(node.phase(of: "alice") == .reloading)
    // Nothing runs until the reload: a late commit or pull result is ignored.
    #expect(node.committed("alice", success: true) == [] && node.pulled("alice") == [])
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [])])
  }

  @Test func othersWritesArePulledWhenTheAccountIsIdle() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice")
    // A notice while loading: the load reads everything anyway, but a pull afterwards is harmless and simple.
    #expect(node.othersWrote("alice") == [])
    #expect(node.loaded("alice", success: true) == [.pull("alice")])
    #expect(node.phase(of: "alice") == .busy)
    #expect(node.pulled("alice") == [.resume("alice", sessions: [])])
    #expect(node.othersWrote("alice") == [.pull("alice")])
    // Notices during the pull or a commit are remembered: one more pull once idle.
    #expect(node.othersWrote("alice") == [])
    #expect(node.pulled("alice") == [.pull("alice")])
    // A pull that failed merged nothing: the waiting requests run on the engine as it is, and the pull is retried.
    #expect(node.pulled("alice", success: false) == [.resume("alice", sessions: [])])
    #expect(node.isIdle("alice"))
    #expect(node.othersWrote("nobody") == [])
  }

  /// Issue #34's drill: a turn both committed an account and heard a notice for it, so a commit and a pull were in
  /// flight at once; PostgreSQL went away, the pull failed first and made the account idle, and the commit's failure
  /// that followed was ignored — the node kept a change PostgreSQL never stored, for good.
  @Test func aCommitAndAPullInFlightTogetherKeepTheAccountBusyAndAFailedCommitStillReloads() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice")
    _ = node.loaded("alice", success: true)
    #expect(node.othersWrote("alice") == [.pull("alice")])
    node.committing("alice")
    #expect(node.pulled("alice", success: false) == [])
    #expect(node.phase(of: "alice") == .busy)
    #expect(node.committed("alice", success: false) == [.load("alice")])
    #expect(node.phase(of: "alice") == .reloading)
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [])])
    // The other order, and two commits: idle only once every one is answered; a success does not hide a failure.
    #expect(node.othersWrote("alice") == [.pull("alice")])
    node.committing("alice")
    node.committing("alice")
    #expect(node.committed("alice", success: false) == [])
    #expect(node.committed("alice", success: true) == [])
    #expect(node.phase(of: "alice") == .busy)
    #expect(node.pulled("alice") == [.load("alice")])
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [])])
    node.committing("alice")
    #expect(node.othersWrote("alice") == [])
    #expect(node.committed("alice", success: true) == [.pull("alice")])
    #expect(node.pulled("alice") == [.resume("alice", sessions: [])])
  }

  /// Issue #34's drill (seed 100): a pull's merge queued an operation of the node's just as a failed commit's reload
  /// began; the turn's commit made the reloading account busy, the load's completion was then ignored, and the next
  /// pull never ended — the account's requests waited for good. A loading account is not made busy by a commit.
  @Test func aReloadingAccountIsNotMadeBusyByACommit() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice")
    _ = node.loaded("alice", success: true)
    node.committing("alice")
    #expect(node.committed("alice", success: false) == [.load("alice")])
    node.committing("alice")
    #expect(node.phase(of: "alice") == .reloading)
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [])])
    #expect(node.isIdle("alice"))
  }

  /// A pull that finds the operations after the cursor pruned (#34's retention) reads the account again — at once
  /// when nothing else is in flight, after the commit in flight otherwise (no commit counted, the account still busy
  /// until then).
  @Test func aPullBehindTheRetainedOperationsReadsTheAccountAgain() {
    var node = HostedNode(capacity: 10)
    _ = node.need("alice")
    _ = node.loaded("alice", success: true)
    #expect(node.othersWrote("alice") == [.pull("alice")])
    #expect(node.pulledBehindRetention("alice") == [.load("alice")])
    #expect(node.phase(of: "alice") == .reloading)
    #expect(node.loaded("alice", success: true) == [.resume("alice", sessions: [])])
    #expect(node.othersWrote("alice") == [.pull("alice")])
    node.committing("alice")
    #expect(node.pulledBehindRetention("alice") == [])
    #expect(node.phase(of: "alice") == .busy)
    #expect(node.committed("alice", success: true) == [.load("alice")])
    #expect(node.pulledBehindRetention("alice") == [])
  }

  @Test func theLeastRecentlyUsedIdleAccountsWithoutSessionsAreEvicted() {
    var node = HostedNode(capacity: 3)
    for account in ["a", "b", "c"] {
      _ = node.need(account)
      _ = node.loaded(account, success: true)
    }
    #expect(node.evictable == 3)
    node.sessionOpened("a")
    _ = node.need("b")  // b is now the most recently used
    _ = node.need("d")
    // d's load pushes the count past the capacity: c is the oldest without a session (a has one, b was used).
    #expect(node.loaded("d", success: true) == [.resume("d", sessions: []), .evict("c")])
    _ = node.need("e")
    #expect(node.loaded("e", success: true) == [.resume("e", sessions: []), .evict("b")])
    // An account with a session stays; a busy one too. Past capacity with nothing evictable: nothing is dropped.
    node.committing("d")
    _ = node.need("f")
    #expect(node.loaded("f", success: true) == [.resume("f", sessions: []), .evict("e")])
    #expect(Set(node.accounts) == ["a", "d", "f"])
    node.sessionOpened("f")
    _ = node.need("g")
    // g is loaded for requests waiting on it: it is not evicted the moment they can run, even past capacity.
    #expect(node.loaded("g", success: true) == [.resume("g", sessions: [])])
    #expect(node.count == 4)
    // The session closing makes a evictable: the oldest evictable goes (g, listed before a).
    #expect(node.sessionClosed("a") == [.evict("g")])
    #expect(node.count == 3)
  }

  @Test func aDeletedAccountIsDroppedWhateverItWasDoing() {
    var node = HostedNode(capacity: 3)
    _ = node.need("alice")
    _ = node.loaded("alice", success: true)
    node.committing("alice")
    #expect(node.deleted("alice") == [.evict("alice")])
    #expect(node.phase(of: "alice") == nil && node.evictable == 0)
    #expect(node.committed("alice", success: true) == [])
    #expect(node.deleted("alice") == [])
  }

  /// Found by HostedNodeModelTests (#44): an account changed this loop turn without a session on this node (an admin's
  /// request, or a session closed right after sending it) was evicted by another account's load finishing in the same
  /// turn. Its changes were then committed from an engine no longer resident — or, when a request asked for it again
  /// in that turn, dropped at the turn's end because the account was loading (a reply sent for a change never stored),
  /// and a read racing the commit could install the state before it. It now stays resident until the turn ends.
  @Test func anAccountChangedThisTurnIsNotEvictedBeforeItsCommit() {
    var node = HostedNode(capacity: 1)
    _ = node.need("alice")
    _ = node.loaded("alice", success: true)
    #expect(node.evictable == 1)
    node.changed("alice")
    #expect(node.evictable == 0)
    #expect(node.need("bob") == [.load("bob")])
    #expect(node.loaded("bob", success: true) == [.resume("bob", sessions: [])])
    #expect(node.phase(of: "alice") == .idle)
    node.committing("alice")
    // The turn ended: alice is being committed (busy), so the account past capacity that goes is bob.
    #expect(node.turnEnded("alice") == [.evict("bob")])
    #expect(node.committed("alice", success: true) == [.resume("alice", sessions: [])])
    #expect(node.phase(of: "alice") == .idle && node.evictable == 1)
  }

  @Test func aTurnThatCommitsNothingReleasesThePin() {
    var node = HostedNode(capacity: 1)
    _ = node.need("alice")
    _ = node.loaded("alice", success: true)
    node.changed("alice")
    _ = node.need("bob")
    _ = node.loaded("bob", success: true)
    #expect(node.count == 2 && node.evictable == 1)
    // Nothing committed: alice is evictable again, after bob (the older entry), which goes.
    #expect(node.turnEnded("alice") == [.evict("bob")])
    #expect(node.count == 1 && node.evictable == 1 && node.isIdle("alice"))
  }
}
