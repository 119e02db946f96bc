/// An erased account's tombstone, as a node keeps it: tokens issued at or before `erasedAt` (or without `iat`) are
/// refused until `until`; `reopened` once a token issued after the erasure started the account again.
public struct Tombstone: Sendable, Equatable {
  public var erasedAt: Double
  public var until: Double
  public var reopened: Bool

  public init(erasedAt: Double, until: Double, reopened: Bool) {
    self.erasedAt = erasedAt
    self.until = until
    self.reopened = reopened
  }
}

/// The erased accounts a node knows of (``HostedNode/erasures``): their tombstones — read from PostgreSQL once it can
/// be read, then kept by the deletions heard — and the accounts being started again by a newer token. Times are the
/// wall clock's seconds (a tombstone's instants are PostgreSQL's, shared by the fleet).
public struct Erasures: Sendable {
  /// What a reopening's answer was.
  public enum Reopening: Sendable, Equatable {
    /// The account starts again, empty (its tombstone marked reopened).
    case reopened
    /// Erased again since the token was issued (on another node): the tombstones are read again.
    case erasedAgain
    /// PostgreSQL did not answer: the requests that waited are refused.
    case failed
  }

  public private(set) var tombstones: [String: Tombstone] = [:]
  /// Accounts whose reopening is in flight (one at a time per account).
  public private(set) var reopening: Set<String> = []
  /// Whether the standing tombstones were read from PostgreSQL (reads are kept current by deletion notices after).
  public private(set) var isRead = false
  private var reading = false

  public init() {}

  /// The tombstone standing for `account` at `now`, if any.
  public func standing(_ account: String, now: Double) -> Tombstone? {
    guard let tombstone = tombstones[account], tombstone.until > now else { return nil }
    return tombstone
  }

  /// Whether a token of `account` issued at `issuedAt` (nil: no `iat`) is refused: a tombstone stands and the token is
  /// not newer than the erasure.
  public func refuses(_ account: String, issuedAt: Double?, now: Double) -> Bool {
    guard let tombstone = standing(account, now: now) else { return false }
    guard let issuedAt else { return true }
    return issuedAt <= tombstone.erasedAt
  }

  /// Whether `account`'s standing tombstone still keeps it from being read (not reopened yet).
  public func awaitsReopening(_ account: String, now: Double) -> Bool {
    guard let tombstone = standing(account, now: now) else { return false }
    return !tombstone.reopened
  }

  /// Keeps the newest tombstone known for `account` (an older erasure heard late only extends how long it stands).
  mutating func learn(_ account: String, erasedAt: Double, until: Double, reopened: Bool) {
    guard let known = tombstones[account], known.erasedAt > erasedAt else {
      tombstones[account] = Tombstone(
        erasedAt: erasedAt, until: max(until, tombstones[account]?.until ?? 0), reopened: reopened)
      return
    }
    tombstones[account]?.until = max(known.until, until)
  }

  /// Forgets the tombstones that no longer stand.
  mutating func expire(now: Double) {
    tombstones = tombstones.filter { $0.value.until > now }
  }

  /// Whether the standing tombstones should be read now (not read yet, no read in flight); marks one in flight.
  mutating func startReading() -> Bool {
    guard !isRead, !reading else { return false }
    reading = true
    return true
  }

  /// The read of the standing tombstones finished (`rows` nil: it failed, tried again later).
  public mutating func read(_ rows: [(account: String, tombstone: Tombstone)]?) {
    reading = false
    guard let rows else { return }
    isRead = true
    for row in rows {
      learn(
        row.account, erasedAt: row.tombstone.erasedAt, until: row.tombstone.until, reopened: row.tombstone.reopened)
    }
  }

  /// Starts reopening `account`: false when one is in flight already (the session waits for that one).
  mutating func startReopening(_ account: String) -> Bool { reopening.insert(account).inserted }

  mutating func reopened(_ account: String, _ answer: Reopening) {
    reopening.remove(account)
    switch answer {
    case .reopened: tombstones[account]?.reopened = true
    case .erasedAgain: isRead = false
    case .failed: break
    }
  }
}

/// The accounts a node's own commits grew past `--compaction-threshold` operations after their snapshot
/// (``HostedNode/compactions``), and whether a compaction round is running (one at a time).
public struct Compactions: Sendable {
  /// Each due account's newest cursor when it was found due.
  public private(set) var due: [String: Int64] = [:]
  public private(set) var isRunning = false

  public init() {}

  /// A commit of `account` stored operations up to `last`: due when that is past `threshold` after its snapshot.
  mutating func grew(_ account: String, last: Int64, snapshotCursor: Int64, threshold: Int64) {
    guard last - snapshotCursor > threshold else { return }
    due[account] = max(due[account] ?? last, last)
  }

  /// Starts a round: at most `limit` due accounts, in account order, those compacted since far enough skipped
  /// (`snapshotCursor`: the resident account's snapshot cursor, nil when not resident). Each is taken off the due
  /// list; nothing when a round is running or none is due.
  mutating func start(limit: Int, threshold: Int64, snapshotCursor: (String) -> Int64?) -> [String] {
    guard !isRunning, !due.isEmpty else { return [] }
    var accounts: [String] = []
    for (account, last) in due.sorted(by: { $0.key < $1.key }) where accounts.count < limit {
      due[account] = nil
      if let cursor = snapshotCursor(account), last - cursor <= threshold { continue }
      accounts.append(account)
    }
    isRunning = !accounts.isEmpty
    return accounts
  }

  /// The round finished.
  mutating func finished() { isRunning = false }

  mutating func forget(_ account: String) { due[account] = nil }
}

extension HostedNode {
  // MARK: Erasures

  /// An erasure of `account` was heard (this node's deletion, another node's notice, or the standing tombstones read):
  /// its tombstone is kept. The account itself is dropped by ``deleted(_:)``.
  public mutating func learnErasure(_ account: String, erasedAt: Double, until: Double, reopened: Bool = false) {
    erasures.learn(account, erasedAt: erasedAt, until: until, reopened: reopened)
  }

  /// The housekeeping's second on the wall clock: tombstones that no longer stand are forgotten.
  public mutating func expireErasures(wallNow: Double) { erasures.expire(now: wallNow) }

  /// Whether the standing tombstones should be read now (never read, or to be read again, and no read in flight):
  /// true marks a read in flight, answered by ``erasuresRead(_:)``.
  public mutating func startReadingErasures() -> Bool { erasures.startReading() }

  /// The standing tombstones were read; `rows` nil when the read failed.
  public mutating func erasuresRead(_ rows: [(account: String, tombstone: Tombstone)]?) { erasures.read(rows) }

  /// Starts `account` again for a token newer than its erasure: false when its reopening is in flight already.
  public mutating func startReopening(_ account: String) -> Bool { erasures.startReopening(account) }

  /// The reopening of `account` was answered: reopened, it is read (empty) and its waiters go on once it is idle;
  /// failed, its waiters are refused; erased again, the caller drops it again (``deleted(_:)``) and the tombstones
  /// are read anew.
  public mutating func reopenAnswered(_ account: String, _ answer: Erasures.Reopening) -> [Action] {
    erasures.reopened(account, answer)
    switch answer {
    case .reopened: return need(account)
    case .failed: return [.failWaiters(account, sessions: takeWaiters(of: account))]
    case .erasedAgain: return []
    }
  }

  // MARK: Compaction

  /// A commit of `account` stored operations up to `last` (`snapshotCursor`: its snapshot's): it is due for a new
  /// snapshot once that is more than `threshold` operations.
  public mutating func grew(_ account: String, last: Int64, snapshotCursor: Int64, threshold: Int64) {
    compactions.grew(account, last: last, snapshotCursor: snapshotCursor, threshold: threshold)
  }

  /// The accounts of the next compaction round (``Compactions/start(limit:threshold:snapshotCursor:)``).
  public mutating func startCompaction(limit: Int, threshold: Int64, snapshotCursor: (String) -> Int64?) -> [String] {
    compactions.start(limit: limit, threshold: threshold, snapshotCursor: snapshotCursor)
  }

  /// The compaction round finished.
  public mutating func compactionFinished() { compactions.finished() }
}
