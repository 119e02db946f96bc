import TipsSync

/// One hosted node's accounts as one state machine (issue #44): which accounts it holds in memory and what each is
/// doing — loading, committing, catching up, backing off after a failed read or pull, orphaned, evicted. Its event
/// methods return actions (no I/O, no clock: times come in with the events), which `HostedService` performs; the
/// service keeps no per-account phase, failure or retry of its own. Tested on its own by `HostedNodeTests` and a
/// model-based test (`HostedNodeModelTests`).
///
/// An account is *resident* from its first request until it is evicted. At any moment it is:
/// - **loading**: its snapshot and operations are being read; requests for it wait (their sessions are parked). A
///   burst of first requests for one account loads it once.
/// - **idle**: its engine may be used: requests run, a catch-up pull may start.
/// - **busy**: its changes are being committed, or a pull is reading what other nodes and devices wrote: requests
///   wait, so the engine never runs ahead of PostgreSQL by more than the one transaction in flight.
/// - **reloading**: a commit failed (or its outcome is unknown): the engine may hold what PostgreSQL does not, so it
///   is read again from PostgreSQL before anything else happens.
/// - **orphaned**: its last read failed. Its requests were answered with the failure; the service may still hold the
///   engine as it was (its sessions' subscriptions), not current. It is read again by the next request once its
///   backoff (1 s doubling to 30 s, reset when PostgreSQL's reader comes back) has passed, or by ``tick(now:readable:)``
///   while it has sessions; without sessions it is dropped there. One phase, so an account is never both resident and
///   orphaned.
///
/// It also keeps the erased accounts' tombstones and reopenings (``erasures``) and the accounts due for compaction
/// (``compactions``): `HostedNode+Erasures.swift`.
///
/// Eviction: past `capacity` resident accounts, the least recently used idle accounts without sessions are dropped
/// (their state is all in PostgreSQL). Accounts with sessions are never evicted; the node may then hold more than
/// `capacity`.
public struct HostedNode: Sendable {
  public enum Phase: Sendable, Equatable { case loading, idle, busy, reloading, orphaned }

  public enum Action: Sendable, Equatable {
    /// Read the account from PostgreSQL (``HostedNode/loaded(_:success:reason:now:)`` when done).
    case load(String)
    /// The account is idle again: run the requests of these sessions, which waited for it (in the order they came).
    case resume(String, sessions: [UInt64])
    /// Loading failed: answer the requests of these sessions, which waited for it, with the failure.
    case failWaiters(String, sessions: [UInt64])
    /// Read what others stored after the account's cursor (``HostedNode/pulled(_:success:now:)`` when done).
    case pull(String)
    /// Drop the account's engine from memory.
    case evict(String)
  }

  @usableFromInline
  struct Entry: Sendable {
    @usableFromInline var phase: Phase
    /// A fleet notification said others stored operations up to this cursor (pull when idle).
    var wantsPull = false
    /// Commits in flight (a turn's commit may start while a pull is reading, and the reverse: the account is busy
    /// until both are done).
    var commits = 0
    /// A pull is reading.
    var pulling = false
    /// A commit failed while something else was in flight: the account is read again once nothing is.
    var reloadDue = false
    /// Its requests changed it this loop turn: it is not evicted before the turn's end commits it (its engine holds
    /// what PostgreSQL does not yet; evicted, a read racing the commit could install the state before it).
    var pinned = false
    /// Why its last read failed (orphaned), for the requests it refuses.
    var failure: String?
    /// Orphaned: not read again before this instant (the loop's seconds).
    var retryAt: Double?
    var loadBackoff = Backoff(first: 1, cap: 30)
    /// Failed pulls in a row: the next is tried after this backoff (``tick(now:readable:)``).
    var pullBackoff = Backoff(first: 1, cap: 30)
    // The LRU list of idle accounts without sessions (eviction candidates), most recently used last.
    var previous: String?
    var next: String?
    var listed = false

    /// Runs `body` on the entry where it is stored (`entries[account]?.update { … }`, `entries.values[slot].update
    /// { … }`: no copy); `body` must not touch `entries`.
    mutating func update<R>(_ body: (inout Entry) -> R) -> R { body(&self) }
  }

  /// Where an account's entry is stored. An event finds it once and reads and changes the entry there
  /// (``at(_:_:)``): one hash of the account and no copy of the entry an event, where a copy out and a store back
  /// cost two hashes and two copies (#47: a donation's events on this machine were an eighth of the node's
  /// instructions). Valid while no entry is added or removed.
  private typealias Slot = [String: Entry].Index

  /// Runs `body` on the entry at `slot`, in place; `body` must not touch `entries`.
  @inline(__always)
  private mutating func at<R>(_ slot: Slot, _ body: (inout Entry) -> R) -> R { entries.values[slot].update(body) }

  /// Sessions signed in to each account on this node, counted from the first — apart from the entries, so the count
  /// holds while the account is not resident (its load failed, or has not started) and is never lost.
  private var sessionCounts: [String: Int] = [:]
  /// Resident accounts above which idle ones without sessions are evicted.
  public let capacity: Int
  // Readable inline (``phase(of:)``): the service asks a request's account's phase from its class, where calling an
  // opaque method copied the whole node (#47).
  @usableFromInline private(set) var entries: [String: Entry] = [:]
  private var oldest: String?
  private var newest: String?
  /// Accounts in the eviction list.
  public private(set) var evictable = 0
  /// When each account whose pull failed pulls again.
  private var pullRetries = DeadlineQueue<String>()
  /// The accounts in phase ``Phase/orphaned``.
  private var orphans: Set<String> = []
  /// The sessions whose next request waits for each account (``wait(_:on:)``), in arrival order, and the account each
  /// waits for — apart from the entries, as the session counts: a waiter outlives an erasure that reopens the account.
  private var waiters: [String: [UInt64]] = [:]
  private var waitingOn: [UInt64: String] = [:]
  /// The latest instant an event brought (the loop's seconds).
  public private(set) var now: Double = 0
  /// Erased accounts' tombstones and reopenings (`HostedNode+Erasures.swift`).
  public internal(set) var erasures = Erasures()
  /// Accounts due for a new snapshot, and the compaction round running (`HostedNode+Erasures.swift`).
  public internal(set) var compactions = Compactions()

  public init(capacity: Int) {
    precondition(capacity > 0)
    self.capacity = capacity
  }

  /// Accounts held (in any phase).
  public var count: Int { entries.count }

  @inlinable
  public func phase(of account: String) -> Phase? { entries[account]?.phase }

  /// Every account held.
  public var accounts: [String] { Array(entries.keys) }

  /// Whether requests for `account` may run now.
  @inlinable
  public func isIdle(_ account: String) -> Bool { phase(of: account) == .idle }

  /// Sessions signed in to `account` on this node.
  public func sessions(of account: String) -> Int { sessionCounts[account] ?? 0 }

  /// The sessions waiting for `account`, in arrival order.
  public func waiters(of account: String) -> [UInt64] { waiters[account] ?? [] }

  /// The account `session` waits for, if any.
  public func account(awaitedBy session: UInt64) -> String? { waitingOn[session] }

  /// Why an orphaned account's last read failed.
  public func failure(of account: String) -> String? { entries[account]?.failure }

  /// When an account whose pull failed pulls again, if it is waiting to.
  public func pullRetry(of account: String) -> Double? { pullRetries.deadline(of: account) }

  // MARK: Events

  /// A request (or a new session) needs `account`: loads it when absent, or orphaned once its backoff has passed.
  /// The caller runs the request only if the account is then ``Phase/idle``, refuses it when still
  /// ``Phase/orphaned`` (``failure(of:)`` says why), else parks it (``wait(_:on:)``) until ``Action/resume(_:sessions:)``.
  public mutating func need(_ account: String, now: Double? = nil) -> [Action] {
    if let now { self.now = max(self.now, now) }
    guard let slot = entries.index(forKey: account) else {
      entries[account] = Entry(phase: .loading)
      return [.load(account)]
    }
    let instant = self.now
    let (phase, listed, due) = at(slot) { ($0.phase, $0.listed, ($0.retryAt ?? 0) <= instant) }
    if phase == .orphaned {
      guard due else { return [] }
      unlist(account, at: slot)
      orphans.remove(account)
      at(slot) {
        $0.phase = .reloading
        $0.retryAt = nil
      }
      return [.load(account)]
    }
    // Moved to the newest end of the eviction list (an account with sessions is not in it).
    if listed {
      unlist(account, at: slot)
      if phase == .idle && sessions(of: account) == 0 { list(account, at: slot) }
    }
    return []
  }

  /// Requests changed `account` this loop turn: it stays resident until ``turnEnded(_:)``.
  public mutating func changed(_ account: String) {
    guard let slot = entries.index(forKey: account) else { return }
    unlist(account, at: slot)
    at(slot) { $0.pinned = true }
  }

  /// The loop turn in which `account` changed ended: its changes are being committed (``committing(_:)``, called
  /// first) or it had none to commit; it may be evicted again once idle without sessions.
  public mutating func turnEnded(_ account: String) -> [Action] {
    guard let slot = entries.index(forKey: account) else { return [] }
    let idle = at(slot) { entry -> Bool? in
      guard entry.pinned else { return nil }
      entry.pinned = false
      return entry.phase == .idle
    }
    guard let idle else { return [] }
    if idle && sessions(of: account) == 0 { list(account, at: slot) }
    return evictions()
  }

  /// The load finished. A failed one answers its waiters and orphans the account (``Phase/orphaned``), backing off.
  public mutating func loaded(_ account: String, success: Bool, reason: String? = nil, now: Double? = nil) -> [Action] {
    if let now { self.now = max(self.now, now) }
    guard let slot = entries.index(forKey: account), at(slot, { $0.phase == .loading || $0.phase == .reloading })
    else { return [] }
    guard success else {
      let instant = self.now
      at(slot) { entry in
        entry.phase = .orphaned
        entry.failure = reason ?? "the account could not be read"
        entry.retryAt = instant + entry.loadBackoff.failed()
        entry.wantsPull = false
      }
      orphans.insert(account)
      if sessions(of: account) == 0 { list(account, at: slot) }
      return [.failWaiters(account, sessions: takeWaiters(of: account))] + evictions()
    }
    at(slot) { entry in
      entry.phase = .idle
      entry.failure = nil
      entry.retryAt = nil
      entry.loadBackoff.succeeded()
    }
    return settle(account, at: slot) + evictions(sparing: account)
  }

  /// The account's changes are being committed (its requests wait until ``committed(_:success:)``). A commit may
  /// start while a pull is reading (the turn that touched the account heard a notice for it too), or while another
  /// commit is in flight: the account stays busy until every one of them is answered.
  public mutating func committing(_ account: String) {
    // A loading account commits nothing (the load would be ignored once it was busy): the caller skips it; an
    // orphaned one has nothing current to commit.
    guard let slot = entries.index(forKey: account), at(slot, { $0.phase == .idle || $0.phase == .busy }) else {
      return
    }
    unlist(account, at: slot)
    at(slot) { entry in
      entry.phase = .busy
      entry.commits += 1
    }
  }

  /// A commit finished; on failure the account is read again from PostgreSQL — once nothing else is in flight for
  /// it (a pull that ends first does not make it idle, and the failure is not forgotten).
  public mutating func committed(_ account: String, success: Bool) -> [Action] {
    guard let slot = entries.index(forKey: account) else { return [] }
    let counted = at(slot) { entry in
      guard entry.phase == .busy, entry.commits > 0 else { return false }
      entry.commits -= 1
      if !success { entry.reloadDue = true }
      return true
    }
    guard counted else { return [] }
    return nothingInFlight(account, at: slot)
  }

  /// A read that must see everything stored and nothing new meanwhile (an analytics replay): the account's requests
  /// wait until ``committed(_:success:)`` (success true) ends it.
  public mutating func reading(_ account: String) { committing(account) }

  /// Others stored operations for `account` (a fleet notification past its cursor): pull when idle, or once idle.
  public mutating func othersWrote(_ account: String) -> [Action] {
    // An orphaned account's next read reads everything anyway.
    guard let slot = entries.index(forKey: account) else { return [] }
    let phase = at(slot) { entry -> Phase in
      if entry.phase != .orphaned { entry.wantsPull = true }
      return entry.phase
    }
    return phase == .idle ? settle(account, at: slot) : []
  }

  /// The pull finished: merged, or failed — then nothing was merged, the engine is as it was, and the requests that
  /// waited run now on it (a pull that cannot read must not hold them); the pull is tried again after a backoff
  /// (``tick(now:readable:)``), sooner if a notice comes.
  public mutating func pulled(_ account: String, success: Bool = true, now: Double? = nil) -> [Action] {
    if let now { self.now = max(self.now, now) }
    guard let slot = entries.index(forKey: account), at(slot, { $0.phase == .busy && $0.pulling }) else { return [] }
    let instant = self.now
    let retryAt = at(slot) { entry -> Double? in
      entry.pulling = false
      guard !success else {
        entry.pullBackoff.succeeded()
        return nil
      }
      entry.wantsPull = false
      return instant + entry.pullBackoff.failed()
    }
    if let retryAt { pullRetries.set(account, retryAt) }
    return nothingInFlight(account, at: slot)
  }

  /// Time passed (the node's housekeeping, every second): pulls whose backoff passed start; orphaned accounts whose
  /// backoff passed are read again while they have sessions and dropped without — when PostgreSQL can be read.
  public mutating func tick(now: Double, readable: Bool) -> [Action] {
    self.now = max(self.now, now)
    var actions: [Action] = []
    for account in pullRetries.popDue(self.now) { actions += othersWrote(account) }
    guard readable else { return actions }
    let instant = self.now
    for account in orphans.sorted() {
      guard let slot = entries.index(forKey: account), at(slot, { ($0.retryAt ?? 0) <= instant }) else { continue }
      if sessions(of: account) > 0 {
        actions += need(account)
      } else {
        unlist(account, at: slot)
        entries.remove(at: slot)
        orphans.remove(account)
        actions.append(.evict(account))
      }
    }
    return actions
  }

  /// PostgreSQL's reader is back: orphaned accounts are read again at the next ``tick(now:readable:)`` or request,
  /// whatever their backoff.
  public mutating func readerUp() {
    for account in orphans { entries[account]?.retryAt = nil }
  }

  /// The pull found the operations after the account's cursor pruned (they are in its snapshot now: #34's retention):
  /// nothing was merged, and the account is read again once nothing else is in flight for it.
  public mutating func pulledBehindRetention(_ account: String) -> [Action] {
    guard let slot = entries.index(forKey: account) else { return [] }
    let was = at(slot) { entry -> Bool in
      guard entry.phase == .busy, entry.pulling else { return false }
      entry.pulling = false
      entry.reloadDue = true
      return true
    }
    return was ? nothingInFlight(account, at: slot) : []
  }

  /// A commit or pull of a busy account finished: once none is left in flight it is idle again — or read again, when
  /// a commit failed.
  private mutating func nothingInFlight(_ account: String, at slot: Slot) -> [Action] {
    let next = at(slot) { entry -> Phase? in
      guard entry.commits == 0, !entry.pulling else { return nil }
      if entry.reloadDue {
        entry.reloadDue = false
        entry.phase = .reloading
      } else {
        entry.phase = .idle
      }
      return entry.phase
    }
    switch next {
    case .reloading: return [.load(account)]
    case .idle: return settle(account, at: slot) + evictions(sparing: account)
    default: return []
    }
  }

  /// A session signed in to `account` (resident or not yet): the account is not evicted while it has sessions.
  public mutating func sessionOpened(_ account: String) {
    sessionCounts[account, default: 0] += 1
    guard let slot = entries.index(forKey: account) else { return }
    unlist(account, at: slot)
  }

  /// `session`'s next request waits for `account` (not idle when ``need(_:now:)`` was asked): it is resumed or failed
  /// by the action that ends the wait, exactly once, unless the session goes first (``sessionGone(_:)``).
  public mutating func wait(_ session: UInt64, on account: String) {
    guard waitingOn[session] == nil else { return }
    waitingOn[session] = account
    waiters[account, default: []].append(session)
  }

  /// The session closed: it waits for nothing any more.
  public mutating func sessionGone(_ session: UInt64) {
    guard let account = waitingOn.removeValue(forKey: session) else { return }
    waiters[account]?.removeAll { $0 == session }
    if waiters[account]?.isEmpty == true { waiters[account] = nil }
  }

  /// The sessions waiting for `account`, no longer waiting (an erasure answers or re-parks them itself).
  public mutating func takeWaiters(of account: String) -> [UInt64] {
    guard let sessions = waiters.removeValue(forKey: account) else { return [] }
    for session in sessions { waitingOn[session] = nil }
    return sessions
  }

  public mutating func sessionClosed(_ account: String) -> [Action] {
    guard let count = sessionCounts[account], count > 0 else { return [] }
    sessionCounts[account] = count > 1 ? count - 1 : nil
    guard count == 1, let slot = entries.index(forKey: account) else { return [] }
    if at(slot, { $0.phase == .idle || $0.phase == .orphaned }) { list(account, at: slot) }
    return evictions()
  }

  /// The account was erased: it is dropped whatever it was doing (the caller closes its sessions).
  public mutating func deleted(_ account: String) -> [Action] {
    pullRetries.set(account, nil)
    compactions.forget(account)
    guard let slot = entries.index(forKey: account) else { return [] }
    unlist(account, at: slot)
    entries.remove(at: slot)
    orphans.remove(account)
    return [.evict(account)]
  }

  // MARK: Internals

  /// An account just became idle: a pull it owes starts (busy again), else its waiters resume.
  private mutating func settle(_ account: String, at slot: Slot) -> [Action] {
    let pulls = at(slot) { entry -> Bool? in
      guard entry.phase == .idle else { return nil }
      guard entry.wantsPull else { return false }
      entry.wantsPull = false
      entry.phase = .busy
      entry.pulling = true
      return true
    }
    guard let pulls else { return [] }
    if pulls {
      unlist(account, at: slot)
      pullRetries.set(account, nil)
      return [.pull(account)]
    }
    // Listed (an account with sessions, the usual case, is not).
    if !at(slot, { $0.listed }) && sessions(of: account) == 0 { list(account, at: slot) }
    return [.resume(account, sessions: waiters.isEmpty ? [] : takeWaiters(of: account))]
  }

  /// Evicts the oldest evictable accounts while more than `capacity` are held — never `sparing`, the account whose
  /// waiting requests are about to run.
  private mutating func evictions(sparing: String? = nil) -> [Action] {
    var actions: [Action] = []
    var candidate = oldest
    while entries.count > capacity, let account = candidate, let slot = entries.index(forKey: account) {
      candidate = at(slot) { $0.next }
      guard account != sparing, waiters[account] == nil else { continue }
      unlist(account, at: slot)
      entries.remove(at: slot)
      orphans.remove(account)
      pullRetries.set(account, nil)
      actions.append(.evict(account))
    }
    return actions
  }

  /// Puts the account at `slot` at the newest end of the eviction list, unless it is there or pinned.
  private mutating func list(_ account: String, at slot: Slot) {
    let newest = self.newest
    let listed = at(slot) { entry -> Bool in
      guard !entry.listed, !entry.pinned else { return false }
      entry.listed = true
      entry.previous = newest
      entry.next = nil
      return true
    }
    guard listed else { return }
    if let newest { entries[newest]?.next = account } else { oldest = account }
    self.newest = account
    evictable += 1
  }

  /// Takes the account at `slot` out of the eviction list, if it is in it.
  private mutating func unlist(_ account: String, at slot: Slot) {
    let neighbours = at(slot) { entry -> (previous: String?, next: String?)? in
      guard entry.listed else { return nil }
      let neighbours = (entry.previous, entry.next)
      entry.listed = false
      entry.previous = nil
      entry.next = nil
      return neighbours
    }
    guard let (previous, next) = neighbours else { return }
    if let previous { entries[previous]?.next = next } else { oldest = next }
    if let next { entries[next]?.previous = previous } else { newest = previous }
    evictable -= 1
  }
}
