/// One hosted node's accounts and sessions as one state machine (issue #44): every per-account fact — phase, commits
/// in flight and the sessions waiting on each, pull wanted/running/backing off, reload due, sessions waiting for the
/// account, load failures, compaction due, erasure — lives here, changed only by ``handle(_:)``, which takes an event
/// and returns the actions a driver performs (no I/O, no clock: times come in the events).
///
/// Phases of a resident account (as ``Residency``'s): **loading** (its first read), **idle** (requests run),
/// **busy** (commits and/or a pull in flight), **reloading** (a commit failed or a pull fell behind retention: read
/// again before anything else). An account with sessions but no engine (its load failed, or it was evicted under
/// them) is *orphaned*; resident and orphaned are two cases of one enum, so never both.
public struct HostedNode: Sendable {
  public enum Phase: Sendable, Equatable { case loading, idle, busy, reloading }

  /// What a session waits for — one state, where `Session` had several flags.
  public enum Waiting: Sendable, Equatable {
    /// The account to be idle (loaded, its commits and pull done).
    case account(String)
    /// The commit of the batch its turn's changes went into.
    case commit(Int)
  }

  public enum Event: Sendable, Equatable {
    case sessionOpened(session: Int, account: String)
    case sessionClosed(session: Int)
    /// A request of `session` needs its account: it runs now if the account is idle, else waits.
    case need(session: Int)
    case loaded(account: String, ok: Bool, now: Double)
    /// A turn changed `account` for these sessions: commit them as one batch.
    case turnEnded(account: String, sessions: [Int])
    case committed(commit: Int, ok: Bool)
    /// A fleet notice: others stored operations for `account`.
    case notice(account: String)
    case pulled(account: String, ok: Bool, behindRetention: Bool, now: Double)
    case linkChanged(up: Bool)
    case tick(now: Double)
    case compacted(account: String)
    /// The account was erased: its engine goes, its sessions are closed.
    case deleted(account: String)
  }

  public enum Action: Sendable, Equatable {
    case load(String)
    case pull(String)
    case commit(account: String, id: Int)
    /// These sessions' wait ended: run (ok) or answer an error (not ok).
    case release(sessions: [Int], ok: Bool)
    case evict(String)
    case closeSession(Int)
    case compact(String)
    /// Call back with ``Event/tick(now:)`` at this time.
    case armTimer(at: Double)
  }

  public struct Engine: Sendable, Equatable {
    public var phase: Phase
    public var commits: Set<Int> = []
    public var wantsPull = false
    public var pulling = false
    public var reloadDue = false
    public var pullFailures = 0
    public var pullRetryAt: Double?
    public var commitsSinceCompaction = 0
    public var compacting = false
    var lastUse = 0
  }

  public enum Residence: Sendable, Equatable {
    case resident(Engine)
    /// Sessions are signed in but no engine is held; the next need loads it (not before `retryAt` after a failure).
    case orphaned(loadFailures: Int, retryAt: Double?)
  }

  public struct Account: Sendable, Equatable {
    public var residence: Residence
    public var sessions: Set<Int> = []
    /// Sessions waiting for the account to be idle, in arrival order.
    public var waiters: [Int] = []
  }

  public let capacity: Int
  public let compactEvery: Int
  public let pullBackoff: (base: Double, max: Double)
  public private(set) var accounts: [String: Account] = [:]
  public private(set) var sessionAccount: [Int: String] = [:]
  public private(set) var waiting: [Int: Waiting] = [:]
  /// Which sessions wait on which commit, and its account.
  public private(set) var batches: [Int: (account: String, sessions: [Int])] = [:]
  public private(set) var linkUp = true
  private var nextCommit = 1
  private var clock = 0
  private var now = 0.0

  public init(capacity: Int, compactEvery: Int = 1_000, pullBackoff: (base: Double, max: Double) = (0.25, 30)) {
    precondition(capacity > 0 && compactEvery > 0)
    self.capacity = capacity
    self.compactEvery = compactEvery
    self.pullBackoff = pullBackoff
  }

  // MARK: Queries

  public func phase(of account: String) -> Phase? {
    if case .resident(let engine)? = accounts[account]?.residence { return engine.phase }
    return nil
  }

  public func engine(of account: String) -> Engine? {
    if case .resident(let engine)? = accounts[account]?.residence { return engine }
    return nil
  }

  public var residentAccounts: Set<String> { Set(accounts.keys.filter { engine(of: $0) != nil }) }

  public var orphanedAccounts: Set<String> {
    Set(accounts.compactMap { if case .orphaned = $0.value.residence { $0.key } else { nil } })
  }

  /// Whether the account owes a pull that has not started (wanted, backing off, or a read pending that covers it).
  public func owesPull(_ account: String) -> Bool {
    guard let engine = engine(of: account) else { return false }
    return engine.wantsPull || engine.pullRetryAt != nil || engine.reloadDue || engine.phase == .loading
      || engine.phase == .reloading
  }

  // MARK: Events

  public mutating func handle(_ event: Event) -> [Action] {
    switch event {
    case .sessionOpened(let session, let account):
      guard sessionAccount[session] == nil else { return [] }
      sessionAccount[session] = account
      accounts[account, default: Account(residence: .orphaned(loadFailures: 0, retryAt: nil))].sessions.insert(session)
      return []
    case .sessionClosed(let session):
      return closed(session)
    case .need(let session):
      return need(session)
    case .loaded(let account, let ok, let at):
      now = max(now, at)
      return loaded(account, ok: ok)
    case .turnEnded(let account, let sessions):
      return turnEnded(account, sessions)
    case .committed(let id, let ok):
      return committed(id, ok: ok)
    case .notice(let account):
      return update(account) { $0.wantsPull = true }
    case .pulled(let account, let ok, let behind, let at):
      now = max(now, at)
      return pulled(account, ok: ok, behindRetention: behind)
    case .linkChanged(let up):
      linkUp = up
      guard up else { return [] }
      // Notices sent while the link was down are lost: every resident account catches up.
      var actions: [Action] = []
      for account in accounts.keys.sorted() where engine(of: account) != nil {
        actions += update(account) { $0.wantsPull = true }
      }
      return actions
    case .tick(let at):
      now = max(now, at)
      var actions: [Action] = []
      for account in accounts.keys.sorted() {
        if let retry = engine(of: account)?.pullRetryAt, retry <= now {
          actions += update(account) {
            $0.pullRetryAt = nil
            $0.wantsPull = true
          }
        }
      }
      return actions
    case .compacted(let account):
      return update(account) { $0.compacting = false }
    case .deleted(let account):
      return deleted(account)
    }
  }

  // MARK: Internals

  private mutating func need(_ session: Int) -> [Action] {
    guard let account = sessionAccount[session], waiting[session] == nil, var record = accounts[account] else {
      return []
    }
    clock += 1
    switch record.residence {
    case .orphaned(_, let retryAt):
      if let retryAt, retryAt > now { return [.release(sessions: [session], ok: false)] }
      record.residence = .resident(Engine(phase: .loading, lastUse: clock))
      record.waiters.append(session)
      accounts[account] = record
      waiting[session] = .account(account)
      return [.load(account)]
    case .resident(var engine):
      engine.lastUse = clock
      record.residence = .resident(engine)
      if engine.phase == .idle {
        accounts[account] = record
        return [.release(sessions: [session], ok: true)]
      }
      record.waiters.append(session)
      accounts[account] = record
      waiting[session] = .account(account)
      return []
    }
  }

  private mutating func loaded(_ account: String, ok: Bool) -> [Action] {
    guard var record = accounts[account], case .resident(var engine) = record.residence,
      engine.phase == .loading || engine.phase == .reloading
    else { return [] }
    guard ok else {
      let failures = 1
      let waiters = record.waiters
      record.waiters = []
      for session in waiters { waiting[session] = nil }
      var actions: [Action] = waiters.isEmpty ? [] : [.release(sessions: waiters, ok: false)]
      if record.sessions.isEmpty {
        accounts[account] = nil
      } else {
        let retryAt = now + backoff(failures)
        record.residence = .orphaned(loadFailures: failures, retryAt: retryAt)
        accounts[account] = record
      }
      actions.append(.evict(account))
      return actions
    }
    // A pull wanted while it read still runs: the notice may be newer than what the load saw.
    engine.phase = .idle
    engine.reloadDue = false
    record.residence = .resident(engine)
    accounts[account] = record
    return settle(account) + evictions()
  }

  private mutating func turnEnded(_ account: String, _ sessions: [Int]) -> [Action] {
    guard var record = accounts[account], case .resident(var engine) = record.residence,
      engine.phase == .idle || engine.phase == .busy, !engine.reloadDue
    else {
      // The engine is being read again (or is gone): the turn's changes cannot be stored.
      return sessions.isEmpty ? [] : [.release(sessions: sessions, ok: false)]
    }
    let id = nextCommit
    nextCommit += 1
    engine.phase = .busy
    engine.commits.insert(id)
    record.residence = .resident(engine)
    accounts[account] = record
    batches[id] = (account, sessions)
    for session in sessions { waiting[session] = .commit(id) }
    return [.commit(account: account, id: id)]
  }

  private mutating func committed(_ id: Int, ok: Bool) -> [Action] {
    guard let batch = batches.removeValue(forKey: id) else { return [] }
    let live = batch.sessions.filter { waiting[$0] == .commit(id) }
    for session in live { waiting[session] = nil }
    var actions: [Action] = live.isEmpty ? [] : [.release(sessions: live, ok: ok)]
    guard var record = accounts[batch.account], case .resident(var engine) = record.residence else { return actions }
    engine.commits.remove(id)
    if ok { engine.commitsSinceCompaction += 1 } else { engine.reloadDue = true }
    record.residence = .resident(engine)
    accounts[batch.account] = record
    actions += nothingInFlight(batch.account)
    return actions
  }

  private mutating func pulled(_ account: String, ok: Bool, behindRetention: Bool) -> [Action] {
    guard var record = accounts[account], case .resident(var engine) = record.residence, engine.pulling else {
      return []
    }
    engine.pulling = false
    var actions: [Action] = []
    if behindRetention {
      engine.reloadDue = true
    } else if ok {
      engine.pullFailures = 0
    } else {
      engine.pullFailures += 1
      let at = now + backoff(engine.pullFailures)
      engine.pullRetryAt = at
      actions.append(.armTimer(at: at))
    }
    record.residence = .resident(engine)
    accounts[account] = record
    return actions + nothingInFlight(account)
  }

  private mutating func nothingInFlight(_ account: String) -> [Action] {
    guard var record = accounts[account], case .resident(var engine) = record.residence, engine.phase == .busy,
      engine.commits.isEmpty, !engine.pulling
    else { return [] }
    if engine.reloadDue {
      engine.reloadDue = false
      engine.phase = .reloading
      record.residence = .resident(engine)
      accounts[account] = record
      return [.load(account)]
    }
    engine.phase = .idle
    record.residence = .resident(engine)
    accounts[account] = record
    return settle(account) + evictions()
  }

  /// Applies `change` to a resident account's engine, then settles it if idle.
  private mutating func update(_ account: String, _ change: (inout Engine) -> Void) -> [Action] {
    guard var record = accounts[account], case .resident(var engine) = record.residence else { return [] }
    change(&engine)
    record.residence = .resident(engine)
    accounts[account] = record
    return engine.phase == .idle ? settle(account) : []
  }

  /// An idle account: a pull it owes starts (busy), else its waiters run; a compaction due starts beside them.
  private mutating func settle(_ account: String) -> [Action] {
    guard var record = accounts[account], case .resident(var engine) = record.residence, engine.phase == .idle else {
      return []
    }
    if engine.wantsPull && linkUp {
      engine.wantsPull = false
      engine.pulling = true
      engine.phase = .busy
      record.residence = .resident(engine)
      accounts[account] = record
      return [.pull(account)]
    }
    var actions: [Action] = []
    if engine.commitsSinceCompaction >= compactEvery && !engine.compacting {
      engine.commitsSinceCompaction = 0
      engine.compacting = true
      actions.append(.compact(account))
    }
    let waiters = record.waiters
    record.waiters = []
    record.residence = .resident(engine)
    accounts[account] = record
    for session in waiters { waiting[session] = nil }
    if !waiters.isEmpty { actions.append(.release(sessions: waiters, ok: true)) }
    return actions
  }

  private mutating func closed(_ session: Int) -> [Action] {
    guard let account = sessionAccount.removeValue(forKey: session) else { return [] }
    waiting[session] = nil
    guard var record = accounts[account] else { return [] }
    record.sessions.remove(session)
    record.waiters.removeAll { $0 == session }
    if record.sessions.isEmpty, case .orphaned = record.residence {
      accounts[account] = nil
      return []
    }
    accounts[account] = record
    return evictions()
  }

  private mutating func deleted(_ account: String) -> [Action] {
    guard let record = accounts.removeValue(forKey: account) else { return [] }
    var actions: [Action] = []
    if !record.waiters.isEmpty { actions.append(.release(sessions: record.waiters, ok: false)) }
    for (id, batch) in batches where batch.account == account {
      let live = batch.sessions.filter { waiting[$0] == .commit(id) }
      if !live.isEmpty { actions.append(.release(sessions: live, ok: false)) }
      batches[id] = nil
    }
    if case .resident = record.residence { actions.append(.evict(account)) }
    for session in record.sessions.sorted() {
      sessionAccount[session] = nil
      waiting[session] = nil
      actions.append(.closeSession(session))
    }
    return actions
  }

  /// Past `capacity`, idle accounts without sessions go, least recently used first.
  private mutating func evictions() -> [Action] {
    var resident = accounts.filter { if case .resident = $0.value.residence { true } else { false } }.count
    guard resident > capacity else { return [] }
    let candidates = accounts.compactMap { key, record -> (String, Int)? in
      guard record.sessions.isEmpty, record.waiters.isEmpty, case .resident(let engine) = record.residence,
        engine.phase == .idle, !engine.compacting
      else { return nil }
      return (key, engine.lastUse)
    }.sorted { ($0.1, $0.0) < ($1.1, $1.0) }
    var actions: [Action] = []
    for (account, _) in candidates where resident > capacity {
      accounts[account] = nil
      resident -= 1
      actions.append(.evict(account))
    }
    return actions
  }

  private func backoff(_ failures: Int) -> Double {
    min(pullBackoff.max, pullBackoff.base * Double(1 << min(failures - 1, 20)))
  }
}
