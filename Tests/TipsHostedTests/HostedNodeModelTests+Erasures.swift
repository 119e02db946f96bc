@testable import TipsHosted

/// The model-based test's erasures and compactions (``HostedNode/erasures``, ``HostedNode/compactions``): the driver
/// feeds them as `HostedService` does and checks, after every step,
/// - every tombstone refuses exactly the tokens issued at or before its erasure (and those without `iat`) while it
///   stands, and nothing once it fell — the node's answer against the books' for tokens on either side;
/// - an account whose tombstone stands, not reopened, is never read; one reopening per account at a time, and a
///   reopened account is read with its waiters released once;
/// - one compaction round at a time, of accounts that grew past the threshold only, each at most once per growth;
///   and, after draining, every account that grew was compacted.
extension HostedNodeDriver {
  static let compactionThreshold: Int64 = 5

  /// Erasures last 30 of the wall clock's seconds here; it moves a second per event.
  mutating func learnErasure(_ account: String) {
    wall += 1
    let erasedAt = wall
    let until = wall + 30
    node.learnErasure(account, erasedAt: erasedAt, until: until)
    if let known = tombstoneBooks[account], known.erasedAt > erasedAt {
      tombstoneBooks[account]?.until = max(known.until, until)
    } else {
      tombstoneBooks[account] = Tombstone(
        erasedAt: erasedAt, until: max(until, tombstoneBooks[account]?.until ?? 0), reopened: false)
    }
    grown[account] = nil
    cursors[account] = nil
    snapshots[account] = nil
  }

  /// As the service's admission: a request for an account whose tombstone stands, not reopened, comes from a token
  /// newer than the erasure (older ones were refused at sign-in); it waits while the account is started again.
  mutating func requestWaitsForReopening(_ account: String) -> Bool {
    guard node.erasures.awaitsReopening(account, now: wall) else { return false }
    nextWaiter += 1
    node.wait(UInt64(nextWaiter), on: account)
    parked[account, default: []].append(UInt64(nextWaiter))
    let started = node.startReopening(account)
    if started == reopenings.contains(account) {
      problems.append("\(account): reopening started \(started), the books say one is in flight: \(!started)")
    }
    reopenings.insert(account)
    trace.append("  waits for reopening \(account)")
    return true
  }

  /// A reopening answered, the wall clock moved, or an old erasure heard late.
  mutating func erasureEvent() {
    let roll = random.next(below: 10)
    if roll < 6, let account = reopenings.sorted().randomElement(using: &random) {
      let answer: Erasures.Reopening = roll < 4 ? .reopened : roll < 5 ? .failed : .erasedAgain
      finishReopening(account, answer)
    } else if roll < 8 {
      wall += Double(random.next(below: 20))
      trace.append("wall \(wall)")
      node.expireErasures(wallNow: wall)
      tombstoneBooks = tombstoneBooks.filter { $0.value.until > wall }
    } else {
      // Tombstones read from PostgreSQL, or a notice heard late: of accounts not in memory (PostgreSQL reads no
      // account whose tombstone keeps it).
      let account = pick()
      guard node.phase(of: account) == nil else { return }
      trace.append("late erasure \(account)")
      let erasedAt = wall - 50
      node.learnErasure(account, erasedAt: erasedAt, until: wall + 5)
      if let known = tombstoneBooks[account], known.erasedAt > erasedAt {
        tombstoneBooks[account]?.until = max(known.until, wall + 5)
      } else {
        tombstoneBooks[account] = Tombstone(
          erasedAt: erasedAt, until: max(wall + 5, tombstoneBooks[account]?.until ?? 0), reopened: false)
      }
    }
  }

  mutating func finishReopening(_ account: String, _ answer: Erasures.Reopening) {
    trace.append("reopening \(account) answered \(answer)")
    reopenings.remove(account)
    switch answer {
    case .reopened:
      tombstoneBooks[account]?.reopened = true
      reopened += 1
      perform(node.reopenAnswered(account, answer))
    case .failed:
      perform(node.reopenAnswered(account, answer))
    case .erasedAgain:
      perform(node.reopenAnswered(account, answer))
      // The service drops it again: its waiters are answered (a token older than the new erasure is refused).
      erase(account)
    }
  }

  /// A successful commit stored operations: the account may be due for compaction.
  mutating func grew(_ account: String) {
    let last = cursors[account, default: 0] + Int64(1 + random.next(below: 3))
    cursors[account] = last
    let snapshot = snapshots[account, default: 0]
    node.grew(account, last: last, snapshotCursor: snapshot, threshold: Self.compactionThreshold)
    if last - snapshot > Self.compactionThreshold { grown[account] = last }
  }

  /// A compaction round starts, or the running one finishes (its snapshots written).
  mutating func compactionEvent() {
    if let round = compacting, random.next(below: 3) > 0 {
      trace.append("compacted \(round)")
      for account in round { snapshots[account] = max(snapshots[account, default: 0], cursors[account, default: 0]) }
      // Grown again while compacting past what the snapshot took: still due (the node kept it listed).
      for account in round where grown[account] != nil && cursors[account, default: 0] <= snapshots[account, default: 0]
      {
        grown[account] = nil
      }
      compacting = nil
      node.compactionFinished()
      return
    }
    let before = grown
    let round = node.startCompaction(limit: 2, threshold: Self.compactionThreshold) { [snapshots] in snapshots[$0] }
    trace.append("compaction round \(round)")
    if let running = compacting {
      if !round.isEmpty { problems.append("a compaction round \(round) started while \(running) runs") }
      return
    }
    if round != round.sorted() || Set(round).count != round.count || round.count > 2 {
      problems.append("compaction round \(round): not distinct accounts in order, at most 2")
    }
    for account in round where before[account] == nil {
      problems.append("\(account) compacted though it did not grow past the threshold since its last compaction")
    }
    for account in round {
      grown[account] = nil
      compacted += 1
    }
    // Accounts the node skipped as compacted since are off its list: the books agree they need nothing.
    for account in before.keys where !round.contains(account) && node.compactions.due[account] == nil {
      if before[account]! - snapshots[account, default: 0] > Self.compactionThreshold {
        problems.append("\(account) dropped from the compaction list, never compacted")
      }
      grown[account] = nil
    }
    if !round.isEmpty { compacting = round }
    if node.compactions.isRunning != !round.isEmpty {
      problems.append("compaction running \(node.compactions.isRunning) after a round of \(round)")
    }
  }

  mutating func checkErasures() {
    for account in accounts {
      let book = tombstoneBooks[account].flatMap { $0.until > wall ? $0 : nil }
      let probes: [Double?] = book.map { [$0.erasedAt - 1, $0.erasedAt, $0.erasedAt + 1, nil] } ?? [wall, nil]
      for issuedAt in probes {
        let expected = book.map { tombstone in issuedAt.map { $0 <= tombstone.erasedAt } ?? true } ?? false
        if node.erasures.refuses(account, issuedAt: issuedAt, now: wall) != expected {
          problems.append("\(account): a token issued at \(String(describing: issuedAt)) refused \(!expected)")
        }
      }
      if node.erasures.awaitsReopening(account, now: wall) != (book.map { !$0.reopened } ?? false) {
        problems.append("\(account): awaits reopening \(!(book.map { !$0.reopened } ?? false)), the books disagree")
      }
    }
    if (compacting != nil) != node.compactions.isRunning {
      problems.append("a compaction round running: \(node.compactions.isRunning), the books say \(compacting != nil)")
    }
  }
}
