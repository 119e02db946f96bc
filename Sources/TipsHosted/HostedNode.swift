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

  struct Entry {
    var phase: Phase
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

    /// Runs `body` on the entry where it is stored (`entries[account]?.update { … }`: one hash of the account, no
    /// copy); `body` must not touch `entries`.
    mutating func update<R>(_ body: (inout Entry) -> R) -> R { body(&self) }
  }

  /// Sessions signed in to each account on this node, counted from the first — apart from the entries, so the count
  /// holds while the account is not resident (its load failed, or has not started) and is never lost.
  private var sessionCounts: [String: Int] = [:]
  /// Resident accounts above which idle ones without sessions are evicted.
  public let capacity: Int
  private var entries: [String: Entry] = [:]
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

  public func phase(of account: String) -> Phase? { entries[account]?.phase }

  /// Every account held.
  public var accounts: [String] { Array(entries.keys) }

  /// Whether requests for `account` may run now.
  public func isIdle(_ account: String) -> Bool { entries[account]?.phase == .idle }

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
    guard var entry = entries[account] else {
      entries[account] = Entry(phase: .loading)
      return [.load(account)]
    }
    if entry.phase == .orphaned {
      guard (entry.retryAt ?? 0) <= self.now else { return [] }
      unlist(account, &entry)
      orphans.remove(account)
      entry.phase = .reloading
      entry.retryAt = nil
      entries[account] = entry
      return [.load(account)]
    }
    // Stored back only when moved in the eviction list (an account with sessions is not in it).
    if entry.listed {
      unlist(account, &entry)
      if entry.phase == .idle && sessions(of: account) == 0 { list(account, &entry) }
      entries[account] = entry
    }
    return []
  }

  /// Requests changed `account` this loop turn: it stays resident until ``turnEnded(_:)``.
  public mutating func changed(_ account: String) {
    guard var entry = entries[account] else { return }
    unlist(account, &entry)
    entry.pinned = true
    entries[account] = entry
  }

  /// The loop turn in which `account` changed ended: its changes are being committed (``committing(_:)``, called
  /// first) or it had none to commit; it may be evicted again once idle without sessions.
  public mutating func turnEnded(_ account: String) -> [Action] {
    guard var entry = entries[account], entry.pinned else { return [] }
    entry.pinned = false
    if entry.phase == .idle && sessions(of: account) == 0 { list(account, &entry) }
    entries[account] = entry
    return evictions()
  }

  /// The load finished. A failed one answers its waiters and orphans the account (``Phase/orphaned``), backing off.
  public mutating func loaded(_ account: String, success: Bool, reason: String? = nil, now: Double? = nil) -> [Action] {
    if let now { self.now = max(self.now, now) }
    guard var entry = entries[account], entry.phase == .loading || entry.phase == .reloading else { return [] }
    guard success else {
      entry.phase = .orphaned
      entry.failure = reason ?? "the account could not be read"
      entry.retryAt = self.now + entry.loadBackoff.failed()
      entry.wantsPull = false
      orphans.insert(account)
      if sessions(of: account) == 0 { list(account, &entry) }
      entries[account] = entry
      return [.failWaiters(account, sessions: takeWaiters(of: account))] + evictions()
    }
    entry.phase = .idle
    entry.failure = nil
    entry.retryAt = nil
    entry.loadBackoff.succeeded()
    entries[account] = entry
    return settle(account) + evictions(sparing: account)
  }

  /// The account's changes are being committed (its requests wait until ``committed(_:success:)``). A commit may
  /// start while a pull is reading (the turn that touched the account heard a notice for it too), or while another
  /// commit is in flight: the account stays busy until every one of them is answered.
  public mutating func committing(_ account: String) {
    // A loading account commits nothing (the load would be ignored once it was busy): the caller skips it; an
    // orphaned one has nothing current to commit.
    guard var entry = entries[account], entry.phase == .idle || entry.phase == .busy else { return }
    unlist(account, &entry)
    entry.phase = .busy
    entry.commits += 1
    entries[account] = entry
  }

  /// A commit finished; on failure the account is read again from PostgreSQL — once nothing else is in flight for
  /// it (a pull that ends first does not make it idle, and the failure is not forgotten).
  public mutating func committed(_ account: String, success: Bool) -> [Action] {
    let counted = entries[account]?.update { entry in
      guard entry.phase == .busy, entry.commits > 0 else { return false }
      entry.commits -= 1
      if !success { entry.reloadDue = true }
      return true
    }
    guard counted == true else { return [] }
    return nothingInFlight(account)
  }

  /// A read that must see everything stored and nothing new meanwhile (an analytics replay): the account's requests
  /// wait until ``committed(_:success:)`` (success true) ends it.
  public mutating func reading(_ account: String) { committing(account) }

  /// Others stored operations for `account` (a fleet notification past its cursor): pull when idle, or once idle.
  public mutating func othersWrote(_ account: String) -> [Action] {
    // An orphaned account's next read reads everything anyway.
    guard var entry = entries[account], entry.phase != .orphaned else { return [] }
    entry.wantsPull = true
    entries[account] = entry
    return entry.phase == .idle ? settle(account) : []
  }

  /// The pull finished: merged, or failed — then nothing was merged, the engine is as it was, and the requests that
  /// waited run now on it (a pull that cannot read must not hold them); the pull is tried again after a backoff
  /// (``tick(now:readable:)``), sooner if a notice comes.
  public mutating func pulled(_ account: String, success: Bool = true, now: Double? = nil) -> [Action] {
    if let now { self.now = max(self.now, now) }
    guard var entry = entries[account], entry.phase == .busy, entry.pulling else { return [] }
    entry.pulling = false
    if success {
      entry.pullBackoff.succeeded()
    } else {
      entry.wantsPull = false
      pullRetries.set(account, self.now + entry.pullBackoff.failed())
    }
    entries[account] = entry
    return nothingInFlight(account)
  }

  /// Time passed (the node's housekeeping, every second): pulls whose backoff passed start; orphaned accounts whose
  /// backoff passed are read again while they have sessions and dropped without — when PostgreSQL can be read.
  public mutating func tick(now: Double, readable: Bool) -> [Action] {
    self.now = max(self.now, now)
    var actions: [Action] = []
    for account in pullRetries.popDue(self.now) { actions += othersWrote(account) }
    guard readable else { return actions }
    for account in orphans.sorted() {
      guard var entry = entries[account], (entry.retryAt ?? 0) <= self.now else { continue }
      if sessions(of: account) > 0 {
        actions += need(account)
      } else {
        unlist(account, &entry)
        entries[account] = nil
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
    guard var entry = entries[account], entry.phase == .busy, entry.pulling else { return [] }
    entry.pulling = false
    entry.reloadDue = true
    entries[account] = entry
    return nothingInFlight(account)
  }

  /// A commit or pull of a busy account finished: once none is left in flight it is idle again — or read again, when
  /// a commit failed.
  private mutating func nothingInFlight(_ account: String) -> [Action] {
    let next = entries[account]?.update { entry -> Phase? in
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
    case .idle: return settle(account) + evictions(sparing: account)
    default: return []
    }
  }

  /// A session signed in to `account` (resident or not yet): the account is not evicted while it has sessions.
  public mutating func sessionOpened(_ account: String) {
    sessionCounts[account, default: 0] += 1
    guard var entry = entries[account] else { return }
    unlist(account, &entry)
    entries[account] = entry
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
    guard count == 1, var entry = entries[account] else { return [] }
    if entry.phase == .idle || entry.phase == .orphaned { list(account, &entry) }
    entries[account] = entry
    return evictions()
  }

  /// The account was erased: it is dropped whatever it was doing (the caller closes its sessions).
  public mutating func deleted(_ account: String) -> [Action] {
    pullRetries.set(account, nil)
    compactions.forget(account)
    guard var entry = entries[account] else { return [] }
    unlist(account, &entry)
    entries[account] = nil
    orphans.remove(account)
    return [.evict(account)]
  }

  // MARK: Internals

  /// An account just became idle: a pull it owes starts (busy again), else its waiters resume.
  private mutating func settle(_ account: String) -> [Action] {
    guard var entry = entries[account], entry.phase == .idle else { return [] }
    if entry.wantsPull {
      entry.wantsPull = false
      entry.phase = .busy
      entry.pulling = true
      unlist(account, &entry)
      entries[account] = entry
      pullRetries.set(account, nil)
      return [.pull(account)]
    }
    // Stored back only when listed now (an account with sessions, the usual case, is left as it is).
    if sessions(of: account) == 0 && !entry.listed {
      list(account, &entry)
      entries[account] = entry
    }
    return [.resume(account, sessions: takeWaiters(of: account))]
  }

  /// Evicts the oldest evictable accounts while more than `capacity` are held — never `sparing`, the account whose
  /// waiting requests are about to run.
  private mutating func evictions(sparing: String? = nil) -> [Action] {
    var actions: [Action] = []
    var candidate = oldest
    while entries.count > capacity, let account = candidate, var entry = entries[account] {
      candidate = entry.next
      guard account != sparing, waiters[account] == nil else { continue }
      unlist(account, &entry)
      entries[account] = nil
      orphans.remove(account)
      pullRetries.set(account, nil)
      actions.append(.evict(account))
    }
    return actions
  }

  private mutating func list(_ account: String, _ entry: inout Entry) {
    guard !entry.listed, !entry.pinned else { return }
    entry.listed = true
    entry.previous = newest
    entry.next = nil
    if let newest { entries[newest]?.next = account } else { oldest = account }
    newest = account
    evictable += 1
  }

  private mutating func unlist(_ account: String, _ entry: inout Entry) {
    guard entry.listed else { return }
    entry.listed = false
    if let previous = entry.previous { entries[previous]?.next = entry.next } else { oldest = entry.next }
    if let next = entry.next { entries[next]?.previous = entry.previous } else { newest = entry.previous }
    entry.previous = nil
    entry.next = nil
    evictable -= 1
  }
}
