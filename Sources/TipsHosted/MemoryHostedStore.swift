public import TipsJSON
public import TipsRecords
import TipsSystem
public import TipsTransport

/// Every account in memory, with ``HostedStore``'s semantics (PostgreSQL's tables and functions, one node): for
/// `tipsd serve --hosted memory:` — trying hosted mode without PostgreSQL, nothing kept past the process — and for the
/// in-process tests and the fuzzers. Each call completes on a later loop turn, as PostgreSQL's answers do; the
/// node hears its own pushes, erasures and catalog reloads as notifications, as it does from PostgreSQL.
///
/// ``isAvailable`` switched off makes it behave as an unreachable PostgreSQL: every call fails and commits are
/// refused until it is switched on again (tests of outages). ``failNextCommits`` fails the next commits (a commit
/// PostgreSQL refused). Loop thread only.
public final class MemoryHostedStore: HostedStorage {
  public var onNotice: ((HostedStore.Notice) -> Void)?
  public var onWritableChange: ((Bool) -> Void)?
  public var onLinkChange: ((Link, Bool) -> Void)?

  /// Whether the store answers (false: as PostgreSQL down).
  public var isAvailable = true {
    didSet {
      guard isAvailable != oldValue, started else { return }
      later { [weak self] in
        guard let self else { return }
        self.onWritableChange?(self.isAvailable)
        for link in Link.allCases { self.onLinkChange?(link, self.isAvailable) }
      }
    }
  }
  /// The next this-many commits fail (and store nothing).
  public var failNextCommits = 0

  public var isWritable: Bool { started && isAvailable }
  public var isReadable: Bool { started && isAvailable }
  public var isListening: Bool { started && isAvailable }
  public var isIncompatible: Bool { false }
  public private(set) var lastError: String?
  public private(set) var commitsInFlight = 0
  public var oldestCommitAge: Double? { nil }
  public var serverDescription: String { "memory:" }

  private struct Account {
    var lastCursor: Int64 = 0
    var historyCursor: Int64 = 0
    var operations: [OperationRow] = []
    /// Operations up to this cursor were pruned (``pruneOperations(of:deviceDays:keep:limit:completion:)``).
    var floor: Int64 = 0
    var identities: Set<String> = []
    var snapshot: AccountSnapshot?
    var replies: [String: IdempotentReply] = [:]
  }

  private struct HistoryRow {
    var account: String
    var cursor: Int64
    var count: Int
    var firstAt: Double
    var lastAt: Double
    var bytes: [UInt8]
    var seq: Int64
  }

  private let loop: any EventLoop
  private var started = false
  private var accounts: [String: Account] = [:]
  private var historyRows: [HistoryRow] = []
  private var fleetSeq: Int64 = 0
  private var erased: [String: Double] = [:]
  private var erasedAt: [String: Double] = [:]
  private var reopened: Set<String> = []
  private var pending: [() -> Void] = []
  private var timer: (any LoopTimer)?

  public init(loop: any EventLoop) {
    self.loop = loop
  }

  public func start() {
    started = true
    later { [weak self] in
      guard let self, self.isAvailable else { return }
      self.onWritableChange?(true)
      for link in Link.allCases { self.onLinkChange?(link, true) }
    }
  }

  public func stop() {
    started = false
    timer?.close()
    timer = nil
    pending = []
  }

  // MARK: Completing later

  /// Runs `action` on a later loop turn (in order), as an answer from PostgreSQL would arrive.
  private func later(_ action: @escaping () -> Void) {
    pending.append(action)
    guard timer == nil else { return }
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    self.timer = timer
    timer.start(afterMilliseconds: 0) { [weak self] in self?.drain() }
  }

  private func drain() {
    timer?.close()
    timer = nil
    let actions = pending
    pending = []
    for action in actions { action() }
  }

  /// Answers `completion` later with `body`'s result, or with an outage's error when the store is unavailable.
  private func answer<T>(
    _ completion: @escaping (Result<T, HostedError>) -> Void, _ body: @escaping () -> Result<T, HostedError>
  ) {
    guard isReadable else {
      let error = HostedError("PostgreSQL is unavailable: the memory store is switched off")
      lastError = error.message
      return later { completion(.failure(error)) }
    }
    later { [weak self] in
      guard let self else { return }
      guard self.isAvailable else {
        return completion(.failure(HostedError("PostgreSQL is unavailable: the memory store is switched off")))
      }
      completion(body())
    }
  }

  private func isErased(_ account: String) -> Bool {
    guard let until = erased[account], !reopened.contains(account) else { return false }
    return until > System.wallClockSeconds()
  }

  /// Fleet notices are lost on the way (as a listener's broken connection loses them): what a node does must not
  /// depend on hearing them.
  public var losesNotices = false

  private func notify(_ notice: HostedStore.Notice) {
    later { [weak self] in
      guard let self, self.isListening, !self.losesNotices else { return }
      self.onNotice?(notice)
    }
  }

  // MARK: Writes

  public func commit(
    _ changes: [HostedStore.AccountChanges],
    completion: @escaping (Result<[String: HostedStore.Committed], HostedError>) -> Void
  ) {
    commitsInFlight += 1
    answer({ [weak self] result in
      self?.commitsInFlight -= 1
      completion(result)
    }) { [weak self] in
      guard let self else { return .failure(HostedError("the store is gone")) }
      if self.failNextCommits > 0 {
        self.failNextCommits -= 1
        return .failure(HostedError("the commit failed (MemoryHostedStore.failNextCommits)"))
      }
      var answers: [String: HostedStore.Committed] = [:]
      for change in changes.sorted(by: { HostedStore.precedes($0.account, $1.account) }) {  // HostedStore's order
        let account = change.account
        // A key committed before refuses this account's part only, answered with the first reply (`tipsd.commit`).
        let first = change.replies.compactMap { self.accounts[account]?.replies[$0.key] }
        if !first.isEmpty && !self.isErased(account) {
          answers[account] = HostedStore.Committed(
            lastCursor: nil, historyFirst: [], refused: "idempotency key \(first[0].key) was used first",
            firstReplies: Dictionary(first.map { ($0.key, $0.result) }, uniquingKeysWith: { a, _ in a }))
          continue
        }
        guard !self.isErased(account) else {
          answers[account] = HostedStore.Committed(
            lastCursor: change.operations.isEmpty ? nil : -1, historyFirst: change.history.map { _ in -1 },
            devicesLastCursor: change.devices.isEmpty ? nil : -1)
          continue
        }
        var stored = self.accounts[account] ?? Account()
        var added = 0
        for operation in change.operations {
          let (seq, payload) = (operation.seq, operation.payload)
          let identity = "\(self.nodeName)\u{1F}\(seq)"
          guard !stored.identities.contains(identity) else { continue }
          stored.identities.insert(identity)
          stored.lastCursor += 1
          added += 1
          stored.operations.append(
            OperationRow(cursor: stored.lastCursor, device: self.nodeName, seq: seq, payload: payload))
        }
        let nodeAdded = added
        var devicesLast: Int64?
        for device in change.devices where !device.operations.isEmpty {
          for operation in device.operations {
            let (seq, payload) = (operation.seq, operation.payload)
            let identity = "\(device.device)\u{1F}\(seq)"
            guard !stored.identities.contains(identity) else { continue }
            stored.identities.insert(identity)
            stored.lastCursor += 1
            added += 1
            stored.operations.append(
              OperationRow(cursor: stored.lastCursor, device: device.device, seq: seq, payload: payload))
          }
          devicesLast = stored.lastCursor
        }
        var firsts: [Int64] = []
        for chunk in change.history {
          let first = stored.historyCursor + 1
          stored.historyCursor += Int64(chunk.count)
          self.historyRows.append(
            HistoryRow(
              account: account, cursor: first, count: chunk.count, firstAt: chunk.firstAt, lastAt: chunk.lastAt,
              bytes: chunk.bytes, seq: self.fleetSeq + 1))
          self.fleetSeq += Int64(chunk.count)
          firsts.append(first)
        }
        for reply in change.replies { stored.replies[reply.key] = reply }
        self.accounts[account] = stored
        answers[account] = HostedStore.Committed(
          lastCursor: change.operations.isEmpty ? nil : stored.lastCursor - Int64(added - nodeAdded),
          historyFirst: firsts, devicesLastCursor: devicesLast)
        if added > 0 { self.notify(.operations(account: account, cursor: stored.lastCursor)) }
      }
      return .success(answers)
    }
  }

  /// The node's name in the operations it stores (``HostedStore``'s is its configuration's; one node here).
  public var nodeName = "memory"

  public func writeSnapshot(
    account: String, _ snapshot: AccountSnapshot, completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self else { return .success(()) }
      var stored = self.accounts[account] ?? Account()
      if (stored.snapshot?.cursor ?? -1) < snapshot.cursor { stored.snapshot = snapshot }
      self.accounts[account] = stored
      return .success(())
    }
  }

  public func deleteAccount(
    _ account: String, erasureDays: Double, completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self else { return .success(()) }
      self.erased[account] = System.wallClockSeconds() + erasureDays * 86_400
      self.erasedAt[account] = System.wallClockSeconds()
      self.reopened.remove(account)
      self.accounts[account] = nil
      self.historyRows.removeAll { $0.account == account }
      self.notify(.deleted(account: account))
      return .success(())
    }
  }

  public func notifyCatalog(version: String) {
    guard isWritable else { return }
    notify(.catalog(version: version))
  }

  public func pruneHistory(
    before cutoff: Double, limit: Int, completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self else { return .success(0) }
      var removed = 0
      self.historyRows.removeAll { row in
        guard removed < limit, row.lastAt < cutoff else { return false }
        removed += 1
        return true
      }
      return .success(removed)
    }
  }

  public func importAccount(
    _ account: String, snapshot: AccountSnapshot, history: [HostedStore.HistoryChunk],
    completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self else { return .success(()) }
      let existing = self.accounts[account]
      if existing?.operations.isEmpty == false || existing?.snapshot != nil
        || self.historyRows.contains(where: { $0.account == account })
      {
        return .failure(HostedError("account \(account) already holds state"))
      }
      self.erased[account] = nil
      var stored = existing ?? Account()
      stored.snapshot = snapshot
      for chunk in history {
        let first = stored.historyCursor + 1
        stored.historyCursor += Int64(chunk.count)
        self.historyRows.append(
          HistoryRow(
            account: account, cursor: first, count: chunk.count, firstAt: chunk.firstAt, lastAt: chunk.lastAt,
            bytes: chunk.bytes, seq: self.fleetSeq + 1))
        self.fleetSeq += Int64(chunk.count)
      }
      self.accounts[account] = stored
      return .success(())
    }
  }

  public func pruneReplies(
    before cutoff: Double, limit: Int, completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self else { return .success(0) }
      var removed = 0
      for account in self.accounts.keys.sorted() where removed < limit {
        for (key, reply) in self.accounts[account]!.replies where reply.at < cutoff && removed < limit {
          self.accounts[account]!.replies[key] = nil
          removed += 1
        }
      }
      return .success(removed)
    }
  }

  public func pruneErased(completion: @escaping (Result<Int, HostedError>) -> Void) {
    answer(completion) { [weak self] in
      guard let self else { return .success(0) }
      let now = System.wallClockSeconds()
      let fallen = self.erased.filter { $0.value <= now }.count
      self.erased = self.erased.filter { $0.value > now }
      return .success(fallen)
    }
  }

  // MARK: Reads

  public func load(
    _ account: String, completion: @escaping (Result<HostedStore.StoredAccount, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self else { return .failure(HostedError("the store is gone")) }
      var loaded = HostedStore.StoredAccount(snapshot: nil, operations: [], historyCursor: 0, exists: false)
      loaded.erased = self.isErased(account)
      guard let stored = self.accounts[account] else { return .success(loaded) }
      loaded.exists = true
      loaded.snapshot = stored.snapshot
      loaded.historyCursor = stored.historyCursor
      loaded.replies = Array(stored.replies.values)
      let after = stored.snapshot?.cursor ?? 0
      loaded.operations = stored.operations.filter { $0.cursor > after }
      return .success(loaded)
    }
  }

  public func pull(
    _ account: String, after cursor: Int64, limit: Int,
    completion: @escaping (Result<[OperationRow], HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let stored = self?.accounts[account] else { return .success([]) }
      guard stored.floor <= cursor else { return .failure(.behindRetention) }
      return .success(Array(stored.operations.filter { $0.cursor > cursor }.prefix(max(0, limit))))
    }
  }

  public func pullAsDevice(
    _ account: String, device: String, after cursor: Int64, limit: Int, maxDevices: Int, deviceDays: Double,
    completion: @escaping (Result<PulledOperations, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let stored = self?.accounts[account] else { return .success(.rows([])) }
      if stored.floor > cursor, let snapshot = stored.snapshot {
        return .success(.snapshot(state: snapshot.json.jsonString, cursor: snapshot.cursor))
      }
      return .success(.rows(Array(stored.operations.filter { $0.cursor > cursor }.prefix(max(0, limit)))))
    }
  }

  /// No device syncs with a memory store: an account's operations are kept up to its snapshot only.
  public func pruneOperations(
    of account: String, deviceDays: Double, keep: Int, limit: Int,
    completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self, var stored = self.accounts[account], let snapshot = stored.snapshot else { return .success(0) }
      stored.floor = max(stored.floor, snapshot.cursor)
      let pruned = stored.operations.prefix { $0.cursor <= stored.floor }.prefix(max(0, limit)).count
      stored.operations.removeFirst(pruned)
      self.accounts[account] = stored
      return .success(pruned)
    }
  }

  public func replies(
    of account: String, since: Double, completion: @escaping (Result<[IdempotentReply], HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      .success((self?.accounts[account]?.replies.values ?? [:].values).filter { $0.at >= since })
    }
  }

  public func reply(
    of account: String, key: String, since: Double,
    completion: @escaping (Result<IdempotentReply?, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      .success(self?.accounts[account]?.replies[key].flatMap { $0.at >= since ? $0 : nil })
    }
  }

  public func history(
    _ account: String, after cursor: Int64, limit: Int,
    completion: @escaping (Result<[HostedStore.StoredHistory], HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      let rows = (self?.historyRows ?? []).filter { $0.account == account && $0.cursor + Int64($0.count) - 1 > cursor }
      return .success(
        rows.sorted { $0.cursor < $1.cursor }.prefix(max(0, limit)).map {
          HostedStore.StoredHistory(cursor: $0.cursor, count: $0.count, bytes: $0.bytes)
        })
    }
  }

  public func fleetHistory(
    after seq: Int64, limit: Int, completion: @escaping (Result<[HostedStore.FleetHistory], HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      let rows = (self?.historyRows ?? []).filter { $0.seq + Int64($0.count) - 1 > seq }.sorted { $0.seq < $1.seq }
      return .success(rows.prefix(max(0, limit)).map(Self.fleet))
    }
  }

  public func historyByAccount(
    after account: String, cursor: Int64, limit: Int,
    completion: @escaping (Result<[HostedStore.FleetHistory], HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      func precedes(_ a: (String, Int64), _ b: (String, Int64)) -> Bool {
        a.0 == b.0 ? a.1 < b.1 : a.0.utf8.lexicographicallyPrecedes(b.0.utf8)
      }
      let rows = (self?.historyRows ?? []).filter { precedes((account, cursor), ($0.account, $0.cursor)) }
        .sorted { precedes(($0.account, $0.cursor), ($1.account, $1.cursor)) }
      return .success(rows.prefix(max(0, limit)).map(Self.fleet))
    }
  }

  private static func fleet(_ row: HistoryRow) -> HostedStore.FleetHistory {
    HostedStore.FleetHistory(
      seq: row.seq, account: row.account, cursor: row.cursor, count: row.count, bytes: row.bytes, firstAt: row.firstAt)
  }

  public func fleetHistoryHead(completion: @escaping (Result<Int64, HostedError>) -> Void) {
    answer(completion) { [weak self] in .success(self?.fleetSeq ?? 0) }
  }

  public func historyBounds(
    _ account: String,
    completion: @escaping (Result<(oldestCursor: Int64?, oldestAt: Double?), HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      let rows = (self?.historyRows ?? []).filter { $0.account == account }
      return .success((rows.map(\.cursor).min(), rows.map(\.firstAt).min()))
    }
  }

  public func listAccounts(
    after: String?, limit: Int, completion: @escaping (Result<[(account: String, cursor: Int64)], HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      let names = (self?.accounts.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } ?? [])
        .filter { after == nil || after!.utf8.lexicographicallyPrecedes($0.utf8) }
      return .success(names.prefix(max(0, limit)).map { ($0, self?.accounts[$0]?.lastCursor ?? 0) })
    }
  }

  public func erasedAccounts(completion: @escaping (Result<[ErasedAccount], HostedError>) -> Void) {
    answer(completion) { [weak self] in
      guard let self else { return .success([]) }
      let now = System.wallClockSeconds()
      return .success(
        self.erased.filter { $0.value > now }.sorted { $0.key < $1.key }.map {
          ($0.key, $0.value, self.erasedAt[$0.key] ?? 0, self.reopened.contains($0.key))
        })
    }
  }

  public func reopenAccount(
    _ account: String, issuedAt: Double, completion: @escaping (Result<Bool, HostedError>) -> Void
  ) {
    answer(completion) { [weak self] in
      guard let self, self.isErased(account) else { return .success(true) }
      guard (self.erasedAt[account] ?? 0) < issuedAt else { return .success(false) }
      self.reopened.insert(account)
      return .success(true)
    }
  }
}
