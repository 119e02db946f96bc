import TipsEngine
import TipsHosted
import TipsRecords
import TipsSync
import TipsSystem

// Hosted mode's repair net (issue #44): now and then each resident account's merged state is compared with
// PostgreSQL's at the same cursor; an account that differs is read again, counted (`tipsd_hosted_repairs_total`) and
// logged with what differed. It should stay idle — the fault drill asserts it repaired nothing: a difference is a
// change this node holds that PostgreSQL never stored, or one stored that this node never merged (seed 112's kind).

extension HostedService {
  /// Accounts compared with PostgreSQL, and those found apart (`/metrics`).
  var repairCounts: (checks: Int, repairs: Int) { (repair.checks, repair.repairs) }

  /// Every second: this second's share of a round over the resident accounts, one round each `--repair-interval`.
  func repairTick() {
    let interval = configuration.repairInterval
    guard interval > 0 else { return }
    if repair.queue.isEmpty {
      guard loopSeconds - repair.roundStarted >= interval else { return }
      repair.queue = node.accounts.sorted(by: >)  // popped from the end: in order
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
        apart = self.differs(account, model: model, stored: stored)
      }
      // Apart: the failed "commit" reads the account again (its observers hear what moved), as after a failed commit.
      self.perform(self.node.committed(account, success: !apart))
      self.services.requestEndOfTurn()
    }
  }

  /// Whether PostgreSQL's state of the account differs from the node's at the node's cursor (a later cursor: others
  /// wrote since, and their notice brings a pull — not a difference).
  func differs(_ account: String, model: SyncModel, stored: HostedStore.StoredAccount) -> Bool {
    let last = stored.operations.last?.cursor ?? stored.snapshot?.cursor ?? 0
    guard last == model.cursor else { return false }
    let theirs: SyncModel
    do {
      theirs = try AccountLoader.load(
        account: account, device: configuration.node, engine: makeEngine(account: account),
        snapshot: stored.snapshot, operations: stored.operations, wallNow: System.wallClockSeconds(), decides: false
      ).model
    } catch {
      logger.warning(
        "hosted: cannot check an account against PostgreSQL", [("account", account), ("error", "\(error)")])
      return false
    }
    repair.checks += 1
    let ours = Set(model.stateRows())
    let stored = Set(theirs.stateRows())
    guard ours != stored else { return false }
    repair.repairs += 1
    let onlyOurs = ours.subtracting(stored).map { "\($0.kind) \($0.key)=\($0.value)" }.sorted()
    let onlyTheirs = stored.subtracting(ours).map { "\($0.kind) \($0.key)=\($0.value)" }.sorted()
    logger.error(
      "hosted: an account differed from PostgreSQL at the same cursor; reading it again",
      [
        ("account", account), ("cursor", String(last)), ("node", onlyOurs.prefix(3).joined(separator: "; ")),
        ("postgres", onlyTheirs.prefix(3).joined(separator: "; ")),
      ])
    return true
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
}
