import Foundation
import Testing
import TipsTestSupport

@testable import TipsHosted

/// Model-based tests of ``HostedNode`` (issue #44): seeded random sequences of the events a hosted node feeds it —
/// requests, the ends of loop turns, loads, commits and pulls finishing (or failing), fleet notices, a lost and
/// regained channel, sessions opening and closing, erasures — against a small driver that performs its actions the
/// way `HostedService` does and keeps its own reference books. After every step the invariants below are checked; at
/// the end every operation in flight is finished, and what must eventually happen is checked too.
///
/// - every waiting request is released (resumed or failed) exactly once, and never left behind by an idle account;
/// - no account is committed while it loads or reloads, and none is read while a commit of it is in flight;
/// - every failed commit is followed by a reload of the account before its next commit;
/// - every notice (and every catch-up after the channel was lost) is followed by a pull or a fresh read;
/// - only idle accounts without sessions or waiters are evicted; erased accounts are dropped whatever they did;
/// - a pull never overlaps another pull of the same account;
/// - an account whose read failed (orphaned) refuses requests rather than parking them, is never committed, and is
///   read again while it has sessions (never left stale); resident and orphaned are one phase, so never both.
///
/// `TIPSD_NODE_MODEL_SEED` replays one seed (or a comma-separated list), `TIPSD_NODE_MODEL_STEPS` sets the steps per seed (`make chaos` runs it
/// longer: scripts/chaos).
@Suite struct HostedNodeModelTests {
  static let steps = ProcessInfo.processInfo.environment["TIPSD_NODE_MODEL_STEPS"].flatMap { Int($0) } ?? 3_000
  static let seeds: [UInt64] = {
    if let list = ProcessInfo.processInfo.environment["TIPSD_NODE_MODEL_SEED"] {
      let seeds = list.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
      if !seeds.isEmpty { return seeds }
    }
    let first = UInt64.random(in: 1...1 << 40)
    return (0..<8).map { first + $0 }
  }()

  @Test func randomEventSequencesKeepEveryInvariant() {
    for seed in Self.seeds {
      var driver = HostedNodeDriver(seed: seed)
      for step in 0..<Self.steps {
        driver.step()
        if let problem = driver.problems.first {
          Issue.record("seed \(seed) step \(step): \(problem)\n\(driver.trace.suffix(12).joined(separator: "\n"))")
          return
        }
      }
      driver.drain()
      if let problem = driver.problems.first {
        Issue.record("seed \(seed), after draining: \(problem)\n\(driver.trace.suffix(12).joined(separator: "\n"))")
        return
      }
      #expect(driver.released > 0 && driver.commitsStarted > 0 && driver.pullsStarted > 0, "seed \(seed)")
      #expect(driver.compacted > 0 && driver.reopened > 0, "seed \(seed): erasures and compactions exercised")
    }
    print("HostedNodeModelTests: seeds \(Self.seeds.first!)… (\(Self.seeds.count)), \(Self.steps) steps each")
  }

  /// The driver's books find a broken rule: each invariant, broken on purpose in a copy of the driver's view of
  /// what happened, is reported (the checks are not vacuous).
  @Test func eachInvariantCatchesItsViolation() {
    var driver = HostedNodeDriver(seed: 1)
    driver.request("a0")
    driver.perform(driver.node.loaded("a0", success: true))
    driver.check()
    #expect(driver.problems.isEmpty)

    // A waiter left parked on an idle account.
    var parked = driver
    parked.parked["a0", default: []].append(99)
    parked.check()
    #expect(parked.problems.contains { $0.contains("waiters left") })

    // A commit of an account whose failed commit was not followed by a reload.
    var dirty = driver
    dirty.dirty.insert("a0")
    dirty.touched.insert("a0")
    dirty.endTurn()
    #expect(dirty.problems.contains { $0.contains("before it was read again") })

    // A waiter released twice.
    var twice = driver
    twice.parked["a0", default: []].append(7)
    twice.releasedWaiters.insert(7)
    twice.perform([.resume("a0", sessions: [7])])
    #expect(twice.problems.contains { $0.contains("released twice") })

    // A notice no pull followed.
    var notice = driver
    notice.noticed.insert("a0")
    notice.drainChecks()
    #expect(notice.problems.contains { $0.contains("no pull followed") })

    // An orphaned account with sessions never read again.
    var orphan = driver
    orphan.sessions["a1"] = 1
    orphan.node.sessionOpened("a1")
    orphan.perform(orphan.node.need("a1"))
    orphan.loads.remove("a1")
    orphan.perform(orphan.node.loaded("a1", success: false))
    orphan.drainChecks()
    #expect(orphan.problems.contains { $0.contains("never read again") })

    // An account evicted while a commit of it is in flight.
    var evicted = driver
    evicted.commits["a0", default: 0] += 1
    evicted.perform([.evict("a0")])
    #expect(evicted.problems.contains { $0.contains("evicted while") })

    // A tombstone the node does not keep (a token it lets through is refused by the books).
    var tombstone = driver
    tombstone.tombstoneBooks["a5"] = Tombstone(erasedAt: tombstone.wall, until: tombstone.wall + 10, reopened: false)
    tombstone.check()
    #expect(tombstone.problems.contains { $0.contains("a5: a token issued at") })

    // An erased account read before it was started again.
    var read = driver
    read.node.learnErasure("a3", erasedAt: read.wall, until: read.wall + 10)
    read.tombstoneBooks["a3"] = Tombstone(erasedAt: read.wall, until: read.wall + 10, reopened: false)
    read.perform([.load("a3")])
    #expect(read.problems.contains { $0.contains("read while its tombstone") })

    // Two reopenings of one account at once.
    var reopen = read
    _ = reopen.requestWaitsForReopening("a3")
    reopen.reopenings.remove("a3")
    _ = reopen.requestWaitsForReopening("a3")
    #expect(reopen.problems.contains { $0.contains("reopening started") })

    // An account compacted that did not grow, and one that grew never compacted.
    var compaction = driver
    compaction.node.grew("a2", last: 100, snapshotCursor: 0, threshold: HostedNodeDriver.compactionThreshold)
    compaction.compactionEvent()
    #expect(compaction.problems.contains { $0.contains("a2 compacted though") })
    var never = driver
    never.grown["a1"] = 50
    never.drainChecks()
    #expect(never.problems.contains { $0.contains("never compacted") })
  }
}

/// Performs ``HostedNode``'s actions as `HostedService` does, and keeps the books the invariants are checked against.
struct HostedNodeDriver {
  var node = HostedNode(capacity: 3)
  var random: SplitMix64
  let accounts = ["a0", "a1", "a2", "a3", "a4", "a5"]

  // In flight.
  var loads: Set<String> = []
  var commits: [String: Int] = [:]
  var pulls: Set<String> = []
  /// The loop's seconds: each step takes a tenth of one.
  var clock = 0.0
  /// Reads started this loop turn: their answers come in a later turn (a loop turn's I/O is sent at its end).
  var fresh: Set<String> = []
  // The books.
  var sessions: [String: Int] = [:]
  var parked: [String: [UInt64]] = [:]
  var releasedWaiters: Set<UInt64> = []
  var released = 0
  var nextWaiter = 0
  /// Accounts whose requests ran this turn (committed at its end).
  var touched: Set<String> = []
  /// Accounts with a failed commit not yet followed by a successful read.
  var dirty: Set<String> = []
  /// Accounts others wrote to (a notice, or a catch-up) since their last pull or read began.
  var noticed: Set<String> = []
  var commitsStarted = 0
  var pullsStarted = 0
  // Erasures and compactions (HostedNodeModelTests+Erasures.swift).
  /// The wall clock's seconds (tombstones' instants).
  var wall = 1_000.0
  var tombstoneBooks: [String: Tombstone] = [:]
  var reopenings: Set<String> = []
  var cursors: [String: Int64] = [:]
  var snapshots: [String: Int64] = [:]
  /// Accounts grown past the compaction threshold, not compacted since: their newest cursor.
  var grown: [String: Int64] = [:]
  var compacting: [String]?
  var compacted = 0
  var reopened = 0
  var problems: [String] = []
  var trace: [String] = []

  init(seed: UInt64) { random = SplitMix64(seed: seed) }

  mutating func pick() -> String { accounts[random.next(below: accounts.count)] }

  mutating func step() {
    let roll = random.next(below: 100)
    clock += 0.1
    switch roll {
    case 0..<25: request(pick())
    case 25..<40: endTurn()
    case 40..<52:
      if let account = loads.subtracting(fresh).sorted().randomElement(using: &random) { finishLoad(account) }
    case 52..<66: if let account = commits.keys.sorted().randomElement(using: &random) { finishCommit(account) }
    case 66..<76:
      if let account = pulls.subtracting(fresh).sorted().randomElement(using: &random) { finishPull(account) }
    case 76..<84: notice(pick())
    case 84..<88: tick(readable: random.next(below: 4) > 0)
    case 88..<90: channelRegained()
    case 90..<95: openOrClose(pick())
    case 95..<96: erase(pick())
    case 96..<98: erasureEvent()
    case 98..<99: compactionEvent()
    default: endTurn()
    }
    check()
  }

  // MARK: Events

  mutating func request(_ account: String) {
    trace.append("request \(account) (\(String(describing: node.phase(of: account))))")
    if requestWaitsForReopening(account) { return }
    perform(node.need(account, now: clock))
    if node.isIdle(account) {
      touched.insert(account)
      node.changed(account)
    } else if node.phase(of: account) == .orphaned {
      released += 1  // refused at once, with the failure
    } else {
      nextWaiter += 1
      node.wait(UInt64(nextWaiter), on: account)
      parked[account, default: []].append(UInt64(nextWaiter))
    }
  }

  /// The end of a loop turn: every account whose requests ran commits (the hosted service's `commitTurn`).
  mutating func endTurn() {
    for account in touched.sorted() {
      trace.append("commit \(account) (\(String(describing: node.phase(of: account))))")
      guard let phase = node.phase(of: account) else { continue }  // erased meanwhile: nothing to commit
      if phase == .loading || phase == .reloading || phase == .orphaned {
        problems.append("\(account) committed while it is \(phase)")
      }
      if dirty.contains(account) {
        problems.append("\(account) committed after a failed commit before it was read again")
      }
      node.committing(account)
      commits[account, default: 0] += 1
      commitsStarted += 1
    }
    let ended = touched
    touched.removeAll()
    fresh.removeAll()
    for account in ended.sorted() { perform(node.turnEnded(account)) }
  }

  mutating func finishLoad(_ account: String) {
    let success = random.next(below: 100) < 85
    trace.append("loaded \(account) \(success)")
    loads.remove(account)
    if success { dirty.remove(account) }
    perform(node.loaded(account, success: success, reason: success ? nil : "failed", now: clock))
  }

  mutating func finishCommit(_ account: String) {
    let success = random.next(below: 100) < 85
    trace.append("committed \(account) \(success)")
    commits[account, default: 0] -= 1
    if commits[account] == 0 { commits[account] = nil }
    if !success { dirty.insert(account) }
    if success { grew(account) }
    perform(node.committed(account, success: success))
  }

  mutating func finishPull(_ account: String) {
    let roll = random.next(below: 100)
    trace.append("pulled \(account) \(roll)")
    pulls.remove(account)
    if roll < 8 {
      perform(node.pulledBehindRetention(account))
    } else {
      if roll < 25 { noticed.insert(account) }  // nothing merged: what was heard is still owed
      perform(node.pulled(account, success: roll >= 25, now: clock))
    }
  }

  mutating func notice(_ account: String) {
    trace.append("notice \(account)")
    guard node.phase(of: account) != nil else { return }  // not resident: its next read sees everything
    noticed.insert(account)
    perform(node.othersWrote(account))
  }

  /// The housekeeping's second: pull retries due, orphaned accounts read again (PostgreSQL readable) or dropped.
  mutating func tick(readable: Bool) {
    trace.append("tick \(clock) readable \(readable)")
    perform(node.tick(now: clock, readable: readable))
  }

  /// The fleet's channel came back: what was committed meanwhile may never have been heard (the catch-up).
  mutating func channelRegained() {
    trace.append("channel regained")
    for account in node.accounts.sorted() {
      noticed.insert(account)
      perform(node.othersWrote(account))
    }
  }

  mutating func openOrClose(_ account: String) {
    if sessions[account, default: 0] > 0 && random.next(below: 2) == 0 {
      trace.append("session closed \(account)")
      sessions[account, default: 0] -= 1
      perform(node.sessionClosed(account))
    } else {
      trace.append("session opened \(account)")
      sessions[account, default: 0] += 1
      node.sessionOpened(account)
    }
  }

  /// An admin erased the account: it is dropped, its sessions closed (their waiters answered with the closing).
  mutating func erase(_ account: String) {
    trace.append("erased \(account)")
    learnErasure(account)
    let actions = node.deleted(account)
    released(node.takeWaiters(of: account), waiting: account)
    touched.remove(account)
    dirty.remove(account)
    noticed.remove(account)
    // What is in flight for it finishes into nothing (the service ignores answers for an account it dropped).
    loads.remove(account)
    commits[account] = nil
    pulls.remove(account)
    for _ in 0..<sessions[account, default: 0] { _ = node.sessionClosed(account) }
    sessions[account] = nil
    for action in actions {
      guard case .evict = action else {
        problems.append("erasing \(account) asked for \(action)")
        continue
      }
    }
  }

  // MARK: Actions

  mutating func perform(_ actions: [HostedNode.Action]) {
    for action in actions {
      trace.append("  -> \(action)")
      switch action {
      case .load(let account):
        if loads.contains(account) { problems.append("\(account) read twice at once") }
        if node.erasures.awaitsReopening(account, now: wall) {
          problems.append("\(account) read while its tombstone keeps it from being read")
        }
        if commits[account, default: 0] > 0 { problems.append("\(account) read while a commit of it is in flight") }
        loads.insert(account)
        fresh.insert(account)
        noticed.remove(account)
      case .resume(let account, let sessions):
        if node.phase(of: account) != .idle { problems.append("\(account) resumed while not idle") }
        released(sessions, waiting: account)
      case .failWaiters(let account, let sessions):
        released(sessions, waiting: account)
      case .pull(let account):
        if pulls.contains(account) { problems.append("\(account) pulled twice at once") }
        pulls.insert(account)
        fresh.insert(account)
        pullsStarted += 1
        noticed.remove(account)
      case .evict(let account):
        if sessions[account, default: 0] > 0 { problems.append("\(account) evicted while it has sessions") }
        if commits[account, default: 0] > 0 || loads.contains(account) || pulls.contains(account) {
          problems.append("\(account) evicted while an operation of it is in flight")
        }
        if !(parked[account] ?? []).isEmpty { problems.append("\(account) evicted while requests wait for it") }
        if touched.contains(account) { problems.append("\(account) evicted with changes not yet committed") }
        touched.remove(account)
        noticed.remove(account)
      }
    }
  }

  /// The node released these sessions from waiting for `account`: each once, exactly the ones the books say wait.
  mutating func released(_ sessions: [UInt64], waiting account: String) {
    let waiting = parked[account] ?? []
    if Set(sessions) != Set(waiting) {
      problems.append("\(account) released \(sessions), the books say \(waiting) wait")
    }
    for waiter in sessions { release(waiter) }
    parked[account] = nil
  }

  mutating func release(_ waiter: UInt64) {
    if releasedWaiters.contains(waiter) { problems.append("waiter \(waiter) released twice") }
    releasedWaiters.insert(waiter)
    released += 1
  }

  // MARK: Invariants

  mutating func check() {
    for account in accounts where node.waiters(of: account) != (parked[account] ?? []) {
      let books = parked[account, default: []]
      problems.append("\(account): the node's waiters \(node.waiters(of: account)), the books' \(books)")
    }
    for (account, waiters) in parked where !waiters.isEmpty {
      switch node.phase(of: account) {
      case .idle?: problems.append("\(account) is idle with waiters left parked")
      case nil where !reopenings.contains(account):
        problems.append("\(account) is not resident with waiters left parked")
      case .orphaned?: problems.append("\(account) is orphaned with waiters left parked")
      default: break
      }
    }
    for account in dirty where node.phase(of: account) == .idle {
      problems.append("\(account) is idle after a failed commit, not read again")
    }
    for account in pulls where node.phase(of: account) != .busy {
      problems.append("\(account) is pulling but \(String(describing: node.phase(of: account)))")
    }
    checkErasures()
  }

  /// Finishes everything in flight, successfully, until nothing is left; then what must eventually happen has.
  mutating func drain() {
    var rounds = 0
    while rounds < 1_000 {
      rounds += 1
      endTurn()
      if let account = loads.sorted().first {
        loads.remove(account)
        dirty.remove(account)
        perform(node.loaded(account, success: true))
      } else if let account = commits.keys.sorted().first {
        commits[account, default: 0] -= 1
        if commits[account] == 0 { commits[account] = nil }
        perform(node.committed(account, success: true))
      } else if let account = pulls.sorted().first {
        pulls.remove(account)
        perform(node.pulled(account, success: true))
      } else if node.accounts.contains(where: {
        node.pullRetry(of: $0) != nil || (node.phase(of: $0) == .orphaned && node.sessions(of: $0) > 0)
      }) {
        clock += 30
        tick(readable: true)
      } else if let account = reopenings.sorted().first {
        finishReopening(account, .reopened)
      } else if compacting != nil || !grown.isEmpty {
        compactionEvent()
      } else if touched.isEmpty {
        break
      }
      check()
    }
    drainChecks()
  }

  mutating func drainChecks() {
    for (account, waiters) in parked where !waiters.isEmpty {
      problems.append("\(account): \(waiters.count) waiters never released")
    }
    for account in noticed where node.phase(of: account) != nil {
      problems.append("\(account) heard others wrote, and no pull followed")
    }
    for account in node.accounts where node.phase(of: account) == .orphaned && node.sessions(of: account) > 0 {
      problems.append("\(account) orphaned with sessions, never read again")
    }
    for account in dirty where node.phase(of: account) != nil && node.phase(of: account) != .orphaned {
      problems.append("\(account) resident after a failed commit, never read again")
    }
    for account in grown.keys.sorted() { problems.append("\(account) grew past the threshold, never compacted") }
  }
}
