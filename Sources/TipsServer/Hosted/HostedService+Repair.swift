import TipsEngine
import TipsHosted
import TipsRecords
import TipsSync
import TipsSystem

// Hosted mode's repair net (issue #44): now and then each resident account is compared with PostgreSQL's rows at the
// same cursor — its merge model's state and what its engine shows of it (``AccountDigest``); an account that differs
// is read again, counted (`tipsd_hosted_repairs_total`) and logged with what differed. An account PostgreSQL holds
// more of is not compared (others wrote since: their notice brings a pull); one still behind what PostgreSQL held a
// while earlier, having pulled nothing since, missed that notice (a commit's notice goes out after its answer, schema
// 11: a commit stored whose answer was lost is announced only when its node reads the account again, or never if the
// node died): it pulls, and that is counted as a repair too. The net should stay idle — the fault
// drill asserts it repaired nothing: a difference is a change this node holds that PostgreSQL never stored, or one
// stored that this node never merged (seed 112's kind).

extension HostedService {
  /// Accounts compared with PostgreSQL, and those found apart (`/metrics`).
  var repairCounts: (checks: Int, repairs: Int) { (repair.checks, repair.repairs) }

  /// Every second: this second's share of a round over the resident accounts, one round each `--repair-interval`.
  func repairTick() {
    let interval = configuration.repairInterval
    guard interval > 0 else { return }
    if !store.isListening { repair.listenerDown = loopSeconds }
    if repair.queue.isEmpty {
      guard loopSeconds - repair.roundStarted >= interval else { return }
      repair.queue = node.accounts.sorted(by: >)  // popped from the end: in order
      repair.behind = repair.behind.filter { node.phase(of: $0.key) != nil }
      repair.roundStarted = loopSeconds
      repair.perSecond = Double(repair.queue.count) / interval
      repair.credit = 0
    }
    guard store.isReadable else { return }
    repair.credit += repair.perSecond
    while repair.credit >= 1, let account = repair.queue.popLast() {
      repair.credit -= 1
      check(account)
    }
  }

  /// Whether nothing of the account is on its way to PostgreSQL (what it holds is what it stored, if all is well).
  func isSettled(_ tenant: Tenant) -> Bool {
    !tenant.touched && tenant.seqsInFlight.isEmpty && tenant.devicePushes.isEmpty && tenant.pendingHistory.isEmpty
      && (tenant.model?.outboxCount ?? 0) == 0
  }

  /// Reads the account from PostgreSQL while its requests wait (``HostedNode/reading(_:)``), and compares.
  func check(_ account: String) {
    guard node.isIdle(account), let tenant = tenants[account], let model = tenant.model, isSettled(tenant) else {
      return
    }
    node.reading(account)
    store.load(account) { [weak self] result in
      guard let self else { return }
      var apart = false
      if case .success(let stored) = result, !stored.erased, self.tenants[account] === tenant, tenant.model === model,
        self.isSettled(tenant)
      {
        apart = self.differs(account, tenant: tenant, model: model, stored: stored)
      }
      // Apart: the failed "commit" reads the account again (its observers hear what moved), as after a failed commit.
      self.perform(self.node.committed(account, success: !apart))
      self.services.requestEndOfTurn()
    }
  }

  /// Whether PostgreSQL's state of the account differs from the node's at the node's cursor (a later cursor: others
  /// wrote since, and their notice brings a pull — not a difference, unless it never comes: ``behind(_:model:last:)``).
  func differs(_ account: String, tenant: Tenant, model: SyncModel, stored: HostedStore.StoredAccount) -> Bool {
    let last = stored.operations.last?.cursor ?? stored.snapshot?.cursor ?? 0
    guard last == model.cursor else {
      behind(account, model: model, last: last)
      return false
    }
    repair.behind[account] = nil
    let engine: Engine
    let theirs: SyncModel
    do {
      engine = try makeEngine(account: account)
      theirs = try AccountLoader.load(
        account: account, device: configuration.node, engine: engine, snapshot: stored.snapshot,
        operations: stored.operations, wallNow: System.wallClockSeconds(), decides: false
      ).model
    } catch {
      logger.warning(
        "hosted: cannot check an account against PostgreSQL", [("account", account), ("error", "\(error)")])
      return false
    }
    repair.checks += 1
    let (ours, postgres) = AccountDigest(model: model, engine: tenant.engine).difference(
      from: AccountDigest(model: theirs, engine: engine))
    guard !ours.isEmpty || !postgres.isEmpty else { return false }
    repair.repairs += 1
    logger.error(
      "hosted: an account differed from PostgreSQL at the same cursor; reading it again",
      [
        ("account", account), ("cursor", String(last)), ("node", ours.prefix(4).joined(separator: "; ")),
        ("postgres", postgres.prefix(4).joined(separator: "; ")),
      ])
    return true
  }

  /// How long a node may stay behind PostgreSQL's cursor with no notice before the net pulls for it: longer than a
  /// committing node takes to come back from a fault and announce a commit whose answer it lost (``announceIfUnheard``).
  static let behindGrace: Double = 15

  /// PostgreSQL holds operations of the account past the node's cursor (`last`). Normal while their notice is on its
  /// way; but a node still behind what PostgreSQL held `behindGrace` seconds (and a round) ago — no pull since (its
  /// cursor would be past it), none waiting for its backoff, its LISTEN link seen up at every second since (a catch-up
  /// would have pulled) — never heard that notice: it pulls now (once the check ends), counted as a repair.
  func behind(_ account: String, model: SyncModel, last: Int64) {
    guard last > model.cursor else {
      repair.behind[account] = nil
      return
    }
    guard let seen = repair.behind[account], model.cursor < seen.cursor, repair.listenerDown < seen.at else {
      repair.behind[account] = (last, loopSeconds)
      return
    }
    guard loopSeconds - seen.at >= Self.behindGrace, store.isListening, !catchUpDue, node.pullRetry(of: account) == nil
    else { return }
    repair.behind[account] = nil
    repair.checks += 1
    repair.repairs += 1
    logger.error(
      "hosted: an account stayed behind PostgreSQL with no notice heard; pulling",
      [
        ("account", account), ("cursor", String(model.cursor)), ("postgres", String(last)),
        ("behindSince", String(seen.cursor)), ("seconds", String(Int(loopSeconds - seen.at))),
      ])
    _ = node.othersWrote(account)  // busy while checked: the pull starts once the check ends
  }

  /// The account was read and its last stored operation is this node's own: stored by a commit whose answer never
  /// came (or by this node's previous life), it may never have been announced — announced now (one notification; a
  /// node already past it ignores it).
  func announceIfUnheard(_ account: String, _ stored: HostedStore.StoredAccount) {
    guard let last = stored.operations.last, last.device == configuration.node else { return }
    (store as? HostedStore)?.announce(account: account, cursor: last.cursor)
  }
}

/// The repair net's round and counts (``HostedService/repairTick()``).
struct RepairRound {
  var queue: [String] = []
  var roundStarted = -Double.infinity
  var perSecond = 0.0
  var credit = 0.0
  var checks = 0
  var repairs = 0
  /// Accounts found behind PostgreSQL at their last check: PostgreSQL's last cursor then, and when (loop seconds).
  var behind: [String: (cursor: Int64, at: Double)] = [:]
  /// The last second the LISTEN link was seen down: notices may have gone unheard then (a catch-up follows).
  var listenerDown = -Double.infinity
}
