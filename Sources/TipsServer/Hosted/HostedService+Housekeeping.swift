import TipsAuth
import TipsCatalog
import TipsEngine
import TipsHosted
import TipsJSON
import TipsLogging
import TipsMetrics
import TipsProtocol
import TipsStore
import TipsSync
import TipsSystem
import TipsTransport

// Hosted mode's time-driven work: each account's engine time, the hourly pruning of history and idempotency keys,
// erasure tombstones, compaction into snapshots and the retention of operations.

extension HostedService {
  // MARK: - Time

  /// Re-arms an account's time-driven change (after a request or a commit changed its engine).
  func updateTime(of account: String) {
    guard let tenant = tenants[account] else { return }
    timeQueue.set(account, tenant.engine.nextChangeTime())
  }

  /// Arms the one timer for the earliest time-driven change of any resident account (end of every turn).
  func rearmTime() {
    guard let earliest = timeQueue.earliest() else {
      timeTimer?.stop()
      timeTimerAt = nil
      return
    }
    guard earliest != timeTimerAt else { return }
    timeTimerAt = earliest
    let timer = timeTimer ?? loop.makeTimer()
    timer.keepsLoopAlive = false
    timeTimer = timer
    let milliseconds = UInt64(min(max(0, earliest - clock.now()) * 1000, 86_400_000).rounded(.up)) + 1
    timer.start(afterMilliseconds: milliseconds) { [unowned self] in
      self.timeTimerAt = nil
      self.timePassed()
    }
  }

  func timePassed() {
    let now = clock.now()
    for account in timeQueue.popDue(now) {
      guard let tenant = tenants[account] else { continue }
      guard node.isIdle(account) else {
        // Busy: looked at again once idle (``resumeParked`` re-reads its next change).
        continue
      }
      for step in tenant.engine.advanceTimeInSteps() { services.record(step, in: tenant) }
      updateTime(of: account)
    }
    services.requestEndOfTurn()
  }

  /// The touched accounts' next changes (their engines moved this turn).
  func afterTurn() {
    rearmTime()
  }

  func everySecond() {
    let now = System.wallClockSeconds()
    for id in expiries.popDue(now) {
      guard let session = sessionsByID[id] else { continue }
      closeSession(
        session,
        session.principal?.isAdmin == true
          ? .unauthorized(reason: "expired", "the admin session reached --admin-session-max; sign in again")
          : .unauthorized(reason: "expired", "the session's token expired; sign in again"))
    }
    for id in signInDeadlines.popDue(loopSeconds) {
      guard let session = sessionsByID[id], session.principal == nil else { continue }
      sessionsByID[id] = nil
      closeSession(
        session,
        .unauthorized(
          reason: "signInTimeout",
          "not signed in within \(Self.seconds(configuration.signInTimeout)) s of connecting (--sign-in-timeout)"))
    }
    limiter.forgetFull(now: clock.now())
    for runtime in apps.values { runtime.limiter?.forgetFull(now: clock.now()) }
    discoverLimiter.forgetFull(now: clock.now())
    inputLimiter.forgetFull(now: clock.now())
    signInGuard.tidy(now: now)
    perform(node.tick(now: loopSeconds, readable: store.isReadable))
    repairTick()
    node.expireErasures(wallNow: now)
    if store.isReadable { readErased() }
    compact()
    if writable && !pruning {
      untilHistoryPrune -= 1
      if untilHistoryPrune <= 0 {
        untilHistoryPrune = Self.historyPruneInterval
        pruneHistory()
      }
    }
  }

  /// Reads the standing tombstones once PostgreSQL can be read (then deletion notices keep the copy).
  func readErased() {
    guard node.startReadingErasures() else { return }
    store.erasedAccounts { [weak self] result in
      guard let self else { return }
      self.node.erasuresRead(
        try? result.get().map {
          ($0.account, Tombstone(erasedAt: $0.erasedAt, until: $0.until, reopened: $0.reopened))
        })
    }
  }

  /// Seconds between deletions of history older than `--history-days`.
  static let historyPruneInterval = 3_600
  /// History chunks deleted per statement (another follows while each deletes this many).
  static let historyPruneBatch = 10_000

  /// Deletes the fleet's history older than `--history-days`, whatever the setting was when it was written (with
  /// `--history-days 0`, all of it), in bounded statements so no single one holds locks for long.
  func pruneHistory() {
    let configuration = services.configuration
    let cutoff =
      configuration.recordsHistory ? System.wallClockSeconds() - configuration.historyDays * 86_400 : .infinity
    pruning = true
    deleteInBatches(
      of: Self.historyPruneBatch,
      { limit, done in
        self.store.pruneHistory(before: cutoff, limit: limit, completion: done)
      }
    ) { [weak self] total, failure in
      guard let self else { return }
      if let failure {
        self.logger.warning("hosted: old history not deleted", [("error", failure.message)])
      } else {
        if total > 0 { self.logger.info("hosted: old history deleted", [("chunks", String(total))]) }
        self.store.pruneErased { result in
          if case .success(let count) = result, count > 0 {
            self.logger.info("hosted: fallen tombstones deleted", [("accounts", String(count))])
          }
        }
        self.pruneReplies()
      }
      self.pruning = false
    }
  }

  /// Runs `delete` (a statement deleting at most `limit` rows, answering how many went) again while it deletes a full
  /// batch, so no single statement holds its locks for long; `finished` gets the rows deleted in all, and the failure
  /// that stopped it, if one did.
  func deleteInBatches(
    of limit: Int, _ delete: @escaping (Int, @escaping (Result<Int, HostedError>) -> Void) -> Void,
    finished: @escaping (Int, HostedError?) -> Void
  ) {
    func step(_ total: Int) {
      delete(limit) { result in
        switch result {
        case .success(let count) where count == limit: step(total + count)
        case .success(let count): finished(total + count, nil)
        case .failure(let error): finished(total, error)
        }
      }
    }
    step(0)
  }

  /// Deletes the idempotency keys older than `--idempotency-hours` (every account's, in bounded statements) and
  /// forgets them in the resident accounts.
  func pruneReplies() {
    let cutoff = System.wallClockSeconds() - services.configuration.idempotencyWindow
    for tenant in tenants.values { tenant.idempotency.forget(before: cutoff) }
    deleteInBatches(
      of: Self.historyPruneBatch,
      { limit, done in
        self.store.pruneReplies(before: cutoff, limit: limit, completion: done)
      }
    ) { [weak self] total, _ in
      if total > 0 { self?.logger.info("hosted: old idempotency keys deleted", [("keys", String(total))]) }
    }
  }

  // MARK: - Compaction

  /// Accounts compacted at most per second (one after the other, each one read, folded and written).
  static let compactionBatch = 16

  /// Writes new snapshots of the accounts this node committed to past `--compaction-threshold` operations after
  /// their snapshot, so loading an account reads its snapshot and a few operations rather than its whole past (no
  /// scan of every account: a node compacts what its own commits grew). A snapshot is a pure function of what
  /// PostgreSQL holds (the snapshot and the operations after it, read in one statement), so any node may write it,
  /// two nodes writing one at once agree, and an older one never replaces a newer one. Operations before a snapshot
  /// are then pruned (``pruneOperations(of:)``), but for those a device still has to read.
  func compact() {
    guard writable else { return }
    // Compacted since (by this node) far enough: skipped.
    let accounts = node.startCompaction(
      limit: Self.compactionBatch, threshold: Int64(configuration.compactionThreshold),
      snapshotCursor: { [tenants] in tenants[$0]?.snapshotCursor })
    guard !accounts.isEmpty else { return }
    compact(accounts[...], written: 0)
  }

  func compact(_ accounts: ArraySlice<String>, written: Int) {
    guard let account = accounts.first else {
      node.compactionFinished()
      if written > 0 { logger.debug("hosted: snapshots written", [("accounts", String(written))]) }
      return
    }
    let rest = accounts.dropFirst()
    store.load(account) { [weak self] result in
      guard let self else { return }
      let snapshot: AccountSnapshot
      do {
        let stored = try result.get()
        guard stored.exists, !stored.operations.isEmpty else { return self.compact(rest, written: written) }
        let engine = try self.makeEngine(account: account)
        snapshot = try AccountLoader.snapshot(
          account: account, engine: engine, snapshot: stored.snapshot, operations: stored.operations)
      } catch {
        self.logger.warning("hosted: account not compacted", [("account", account), ("error", "\(error)")])
        return self.compact(rest, written: written)
      }
      self.store.writeSnapshot(account: account, snapshot) { result in
        switch result {
        case .success:
          if let tenant = self.tenants[account] { tenant.snapshotCursor = max(tenant.snapshotCursor, snapshot.cursor) }
          self.pruneOperations(of: account)
          self.compact(rest, written: written + 1)
        case .failure(let error):
          self.logger.warning("hosted: snapshot not written", [("account", account), ("error", error.message)])
          self.compact(rest, written: written)
        }
      }
    }
  }

  /// Operations deleted per statement by the retention of `tipsd.ops`.
  static let operationsPruneBatch = 5_000

  /// The retention of `tipsd.ops` (#34): after a snapshot, the operations it holds go — except those a device seen
  /// within `--ops-device-days` has not read yet — in batches, so the table holds about `--compaction-threshold`
  /// operations per account rather than everything ever done. A node or device behind them reads the snapshot.
  func pruneOperations(of account: String) {
    let days = configuration.opsDeviceDays
    deleteInBatches(
      of: Self.operationsPruneBatch,
      { limit, done in
        self.store.pruneOperations(
          of: account, deviceDays: days, keep: self.configuration.opsKeep, limit: limit, completion: done)
      }
    ) { [weak self] total, failure in
      guard let self else { return }
      if let failure {
        self.logger.warning("hosted: operations not pruned", [("account", account), ("error", failure.message)])
      } else if total > 0 {
        self.logger.debug(
          "hosted: operations held by the snapshot deleted", [("account", account), ("operations", String(total))])
      }
    }
  }
}
