import Testing

@testable import TipsHosted

@Suite struct ResidencyTests {
  @Test func aBurstOfFirstRequestsLoadsOnce() {
    var residency = Residency(capacity: 10)
    #expect(residency.need("alice") == [.load("alice")])
    #expect(residency.need("alice") == [] && residency.need("alice") == [])
    #expect(residency.phase(of: "alice") == .loading && !residency.isIdle("alice"))
    #expect(residency.loaded("alice", success: true) == [.resume("alice")])
    #expect(residency.isIdle("alice"))
    #expect(residency.need("alice") == [])
  }

  @Test func aFailedLoadFailsItsWaitersAndTheNextRequestTriesAgain() {
    var residency = Residency(capacity: 10)
    _ = residency.need("alice")
    #expect(residency.loaded("alice", success: false) == [.failWaiters("alice")])
    #expect(residency.phase(of: "alice") == nil)
    #expect(residency.need("alice") == [.load("alice")])
  }

  @Test func requestsWaitWhileCommittingAndAFailedCommitReloads() {
    var residency = Residency(capacity: 10)
    _ = residency.need("alice")
    _ = residency.loaded("alice", success: true)
    residency.committing("alice")
    #expect(!residency.isIdle("alice"))
    #expect(residency.committed("alice", success: true) == [.resume("alice")])
    residency.committing("alice")
    #expect(residency.committed("alice", success: false) == [.load("alice")])
    #expect(residency.phase(of: "alice") == .reloading)
    // Nothing runs until the reload: a late commit or pull result is ignored.
    #expect(residency.committed("alice", success: true) == [] && residency.pulled("alice") == [])
    #expect(residency.loaded("alice", success: true) == [.resume("alice")])
  }

  @Test func othersWritesArePulledWhenTheAccountIsIdle() {
    var residency = Residency(capacity: 10)
    _ = residency.need("alice")
    // A notice while loading: the load reads everything anyway, but a pull afterwards is harmless and simple.
    #expect(residency.othersWrote("alice") == [])
    #expect(residency.loaded("alice", success: true) == [.pull("alice")])
    #expect(residency.phase(of: "alice") == .busy)
    #expect(residency.pulled("alice") == [.resume("alice")])
    #expect(residency.othersWrote("alice") == [.pull("alice")])
    // Notices during the pull or a commit are remembered: one more pull once idle.
    #expect(residency.othersWrote("alice") == [])
    #expect(residency.pulled("alice") == [.pull("alice")])
    // A pull that failed merged nothing: the waiting requests run on the engine as it is, and the pull is retried.
    #expect(residency.pulled("alice", success: false) == [.retryPull("alice"), .resume("alice")])
    #expect(residency.isIdle("alice"))
    #expect(residency.othersWrote("nobody") == [])
  }

  /// Issue #34's drill: a turn both committed an account and heard a notice for it, so a commit and a pull were in
  /// flight at once; PostgreSQL went away, the pull failed first and made the account idle, and the commit's failure
  /// that followed was ignored — the node kept a change PostgreSQL never stored, for good.
  @Test func aCommitAndAPullInFlightTogetherKeepTheAccountBusyAndAFailedCommitStillReloads() {
    var residency = Residency(capacity: 10)
    _ = residency.need("alice")
    _ = residency.loaded("alice", success: true)
    #expect(residency.othersWrote("alice") == [.pull("alice")])
    residency.committing("alice")
    #expect(residency.pulled("alice", success: false) == [.retryPull("alice")])
    #expect(residency.phase(of: "alice") == .busy)
    #expect(residency.committed("alice", success: false) == [.load("alice")])
    #expect(residency.phase(of: "alice") == .reloading)
    #expect(residency.loaded("alice", success: true) == [.resume("alice")])
    // The other order, and two commits: idle only once every one is answered; a success does not hide a failure.
    #expect(residency.othersWrote("alice") == [.pull("alice")])
    residency.committing("alice")
    residency.committing("alice")
    #expect(residency.committed("alice", success: false) == [])
    #expect(residency.committed("alice", success: true) == [])
    #expect(residency.phase(of: "alice") == .busy)
    #expect(residency.pulled("alice") == [.load("alice")])
    #expect(residency.loaded("alice", success: true) == [.resume("alice")])
    residency.committing("alice")
    #expect(residency.othersWrote("alice") == [])
    #expect(residency.committed("alice", success: true) == [.pull("alice")])
    #expect(residency.pulled("alice") == [.resume("alice")])
  }

  /// Issue #34's drill (seed 100): a pull's merge queued an operation of the node's just as a failed commit's reload
  /// began; the turn's commit made the reloading account busy, the load's completion was then ignored, and the next
  /// pull never ended — the account's requests waited for good. A loading account is not made busy by a commit.
  @Test func aReloadingAccountIsNotMadeBusyByACommit() {
    var residency = Residency(capacity: 10)
    _ = residency.need("alice")
    _ = residency.loaded("alice", success: true)
    residency.committing("alice")
    #expect(residency.committed("alice", success: false) == [.load("alice")])
    residency.committing("alice")
    #expect(residency.phase(of: "alice") == .reloading)
    #expect(residency.loaded("alice", success: true) == [.resume("alice")])
    #expect(residency.isIdle("alice"))
  }

  /// A pull that finds the operations after the cursor pruned (#34's retention) reads the account again — at once
  /// when nothing else is in flight, after the commit in flight otherwise (no commit counted, the account still busy
  /// until then).
  @Test func aPullBehindTheRetainedOperationsReadsTheAccountAgain() {
    var residency = Residency(capacity: 10)
    _ = residency.need("alice")
    _ = residency.loaded("alice", success: true)
    #expect(residency.othersWrote("alice") == [.pull("alice")])
    #expect(residency.pulledBehindRetention("alice") == [.load("alice")])
    #expect(residency.phase(of: "alice") == .reloading)
    #expect(residency.loaded("alice", success: true) == [.resume("alice")])
    #expect(residency.othersWrote("alice") == [.pull("alice")])
    residency.committing("alice")
    #expect(residency.pulledBehindRetention("alice") == [])
    #expect(residency.phase(of: "alice") == .busy)
    #expect(residency.committed("alice", success: true) == [.load("alice")])
    #expect(residency.pulledBehindRetention("alice") == [])
  }

  @Test func theLeastRecentlyUsedIdleAccountsWithoutSessionsAreEvicted() {
    var residency = Residency(capacity: 3)
    for account in ["a", "b", "c"] {
      _ = residency.need(account)
      _ = residency.loaded(account, success: true)
    }
    #expect(residency.evictable == 3)
    residency.sessionOpened("a")
    _ = residency.need("b")  // b is now the most recently used
    _ = residency.need("d")
    // d's load pushes the count past the capacity: c is the oldest without a session (a has one, b was used).
    #expect(residency.loaded("d", success: true) == [.resume("d"), .evict("c")])
    _ = residency.need("e")
    #expect(residency.loaded("e", success: true) == [.resume("e"), .evict("b")])
    // An account with a session stays; a busy one too. Past capacity with nothing evictable: nothing is dropped.
    residency.committing("d")
    _ = residency.need("f")
    #expect(residency.loaded("f", success: true) == [.resume("f"), .evict("e")])
    #expect(Set(residency.accounts) == ["a", "d", "f"])
    residency.sessionOpened("f")
    _ = residency.need("g")
    // g is loaded for requests waiting on it: it is not evicted the moment they can run, even past capacity.
    #expect(residency.loaded("g", success: true) == [.resume("g")])
    #expect(residency.count == 4)
    // The session closing makes a evictable: the oldest evictable goes (g, listed before a).
    #expect(residency.sessionClosed("a") == [.evict("g")])
    #expect(residency.count == 3)
  }

  @Test func aDeletedAccountIsDroppedWhateverItWasDoing() {
    var residency = Residency(capacity: 3)
    _ = residency.need("alice")
    _ = residency.loaded("alice", success: true)
    residency.committing("alice")
    #expect(residency.deleted("alice") == [.evict("alice")])
    #expect(residency.phase(of: "alice") == nil && residency.evictable == 0)
    #expect(residency.committed("alice", success: true) == [])
    #expect(residency.deleted("alice") == [])
  }

  /// Found by ResidencyModelTests (#44): an account changed this loop turn without a session on this node (an admin's
  /// request, or a session closed right after sending it) was evicted by another account's load finishing in the same
  /// turn. Its changes were then committed from an engine no longer resident — or, when a request asked for it again
  /// in that turn, dropped at the turn's end because the account was loading (a reply sent for a change never stored),
  /// and a read racing the commit could install the state before it. It now stays resident until the turn ends.
  @Test func anAccountChangedThisTurnIsNotEvictedBeforeItsCommit() {
    var residency = Residency(capacity: 1)
    _ = residency.need("alice")
    _ = residency.loaded("alice", success: true)
    #expect(residency.evictable == 1)
    residency.changed("alice")
    #expect(residency.evictable == 0)
    #expect(residency.need("bob") == [.load("bob")])
    #expect(residency.loaded("bob", success: true) == [.resume("bob")])
    #expect(residency.phase(of: "alice") == .idle)
    residency.committing("alice")
    // The turn ended: alice is being committed (busy), so the account past capacity that goes is bob.
    #expect(residency.turnEnded("alice") == [.evict("bob")])
    #expect(residency.committed("alice", success: true) == [.resume("alice")])
    #expect(residency.phase(of: "alice") == .idle && residency.evictable == 1)
  }

  @Test func aTurnThatCommitsNothingReleasesThePin() {
    var residency = Residency(capacity: 1)
    _ = residency.need("alice")
    _ = residency.loaded("alice", success: true)
    residency.changed("alice")
    _ = residency.need("bob")
    _ = residency.loaded("bob", success: true)
    #expect(residency.count == 2 && residency.evictable == 1)
    // Nothing committed: alice is evictable again, after bob (the older entry), which goes.
    #expect(residency.turnEnded("alice") == [.evict("bob")])
    #expect(residency.count == 1 && residency.evictable == 1 && residency.isIdle("alice"))
  }
}
