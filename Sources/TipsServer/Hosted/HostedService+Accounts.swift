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

// Hosted mode's accounts in memory: node's actions (load, evict, pull), other nodes' and devices' changes
// heard from the fleet's channel, catch-up after the channel may have gone unheard, erasure.

extension HostedService {
  // MARK: - HostedNode's actions

  func perform(_ actions: [HostedNode.Action]) {
    for action in actions {
      switch action {
      case .load(let account): load(account)
      case .resume(let account, let sessions): resumeParked(account, sessions)
      case .failWaiters(let account, let sessions): failParked(account, sessions)
      case .pull(let account): pull(account)
      case .evict(let account): evict(account)
      }
    }
  }

  func load(_ account: String) {
    store.load(account) { [weak self] result in
      guard let self else { return }
      switch result {
      case .success(let stored) where stored.erased:
        // Erased meanwhile (on another node, whose notice this node may have missed): refused, not recreated — to
        // sessions whose token predates the erasure; one issued after it starts the account again.
        self.logger.info("hosted: an erased account was asked for; refused", [("account", account)])
        _ = self.dropDeleted(account, erasedAt: stored.tombstone?.erasedAt)
      case .success(let stored):
        if let tombstone = stored.tombstone {
          // Started again after an erasure (on another node, perhaps before this one read the tombstones): the
          // sessions of tokens issued before the erasure are closed, the others go on.
          self.node.learnErasure(
            account, erasedAt: tombstone.erasedAt, until: tombstone.until, reopened: tombstone.reopened)
          self.closeSessionsOlderThanErasure(of: account)
        }
        do {
          try self.install(account, from: stored)
          self.announceIfUnheard(account, stored)
          self.perform(self.node.loaded(account, success: true))
        } catch {
          // Orphaned (``HostedNode``): its tenant, if it had one, keeps the engine as it was and its sessions'
          // subscriptions until it is read again.
          self.logger.error("hosted: cannot load an account", [("account", account), ("error", "\(error)")])
          self.perform(
            self.node.loaded(account, success: false, reason: "\(error)", now: self.loopSeconds))
        }
      case .failure(let error):
        self.logger.warning("hosted: cannot load an account", [("account", account), ("error", error.message)])
        self.perform(self.node.loaded(account, success: false, reason: error.message, now: self.loopSeconds))
      }
    }
  }

  /// One copy of each catalog tip for every account this process holds (see ``DefinitionShelf``).
  static let definitionShelf = DefinitionShelf()

  /// A fresh engine for `account`: the catalog registered, variants assigned from the account id.
  func makeEngine(account: String, clock: (any EngineClock)? = nil) throws -> Engine {
    // An app dropped from --apps (SIGHUP) serves no account any more: never its accounts with another's catalog.
    guard serves(AccountKey.app(of: account)) else {
      throw ServerError("account \(account): app \(AccountKey.app(of: account)) is no longer served here (--apps)")
    }
    let engine = Engine(
      clock: clock ?? self.clock,
      configuration: EngineConfiguration(canonicalDonationOrder: true, definitionShelf: Self.definitionShelf))
    _ = try engine.setInstallID(account)
    _ = try catalog(ofAccount: account).current.register(in: engine)
    return engine
  }

  /// Builds (or rebuilds, after a failed commit) the account's tenant from what PostgreSQL holds. A rebuilt tenant
  /// keeps its subscriptions; observers are told of every tip whose value the reload changed.
  /// The account is loaded as of its last instant, then time moves to now: what changed with time while no node held
  /// it is recorded at its own instants (history, exposures, notifications), as if a node had held it all along.
  func install(_ account: String, from stored: HostedStore.StoredAccount) throws {
    let loaded = try AccountLoader.loadAsOfLastInstant(
      account: account, device: configuration.node, clock: clock, snapshot: stored.snapshot,
      operations: stored.operations, wallNow: System.wallClockSeconds()
    ) { try self.makeEngine(account: account, clock: $0) }
    let (engine, model, skipped) = (loaded.engine, loaded.model, loaded.skipped)
    if skipped > 0 {
      logger.warning(
        "hosted: skipped operations this tipsd does not understand", [("account", account), ("count", String(skipped))])
    }
    let history = HistoryRecorder(
      enabled: services.configuration.recordsHistory, appClosedEvent: services.configuration.appClosedEvent,
      state: HistoryState(lastCursor: stored.historyCursor, tips: tenants[account]?.committedHistory?.tips ?? [:]))
    history.refreshTrackedEvents(engine)
    if let tenant = tenants[account] {
      let before = tenant.engine.states()
      tenant.engine = engine
      tenant.history = history
      tenant.model = model
      tenant.pendingHistory.removeAll()
      // What the reload moved back (a change PostgreSQL never stored) reaches observers now.
      var changes: [Change] = []
      for state in engine.states()
      where !before.contains(where: {
        $0.id == state.id && $0.shouldDisplay == state.shouldDisplay && $0.status == state.status
      }) {
        changes.append(.tip(state))
      }
      if !changes.isEmpty { services.recordMerged(Mutation(changes: changes), in: tenant) }
    } else {
      let tenant = Tenant(
        account: account, engine: engine, history: history, subscriptionIDs: services.subscriptionIDs,
        turn: services.turn)
      tenant.model = model
      tenants[account] = tenant
    }
    tenants[account]?.snapshotCursor = stored.snapshot?.cursor ?? 0
    if let tenant = tenants[account] {
      tenant.stateBytes = measureState(of: tenant)
      tenant.stateBytesGrew = false
    }
    let window = System.wallClockSeconds() - services.configuration.idempotencyWindow
    tenants[account]?.idempotency.load(stored.replies.filter { $0.at >= window })
    // A budget reached by merged displays may have queued an operation of this node's: commit it.
    if model.outboxCount > 0, let tenant = tenants[account] { touched(tenant) }
    if let tenant = tenants[account] {
      for step in loaded.replayTime() { services.record(step, in: tenant) }
    }
    updateTime(of: account)
  }

  /// The sessions `node` released from waiting for `account` (``HostedNode/wait(_:on:)``), signed in and still
  /// parked on it.
  func parkedSessions(_ ids: [UInt64], on account: String) -> [Session] {
    ids.compactMap { sessionsByID[$0] }.filter { $0.waiting.account == account }
  }

  func resumeParked(_ account: String, _ ids: [UInt64]) {
    updateTime(of: account)
    for session in parkedSessions(ids, on: account) {
      session.release(from: account)
      services.resumeInput(session)
    }
  }

  func failParked(_ account: String, _ ids: [UInt64], reason: String? = nil) {
    let reason = reason ?? node.failure(of: account) ?? "the account could not be read"
    for session in parkedSessions(ids, on: account) {
      session.release(from: account, refusal: .unavailable(method: "request", retryAfter: 1, "PostgreSQL: \(reason)"))
      services.resumeInput(session)
    }
  }

  func evict(_ account: String) {
    tenants[account] = nil
    timeQueue.set(account, nil)
    logger.debug("hosted: account evicted", [("account", account)])
  }

  // MARK: - Other nodes and devices

  func noticed(_ notice: HostedStore.Notice) {
    switch notice {
    case .operations(let account, let cursor):
      syncChanged(account, cursor: cursor)
      // An account still loading has no model yet: what its load read may predate this operation, so it pulls once
      // loaded (the node knows it only while it is held or loading).
      if let model = tenants[account]?.model, cursor <= model.cursor { return }
      perform(node.othersWrote(account))
    case .deleted(let account):
      _ = dropDeleted(account)
    case .catalog(let version):
      if catalogs?.noticed(version) == true { return }
      guard version != catalog.version else { return }
      reloadCatalog("another node reloaded it")
      if catalog.version != version {
        logger.warning(
          "hosted: another node serves another catalog version than this node's file",
          [("theirs", version), ("ours", catalog.version ?? "none")])
      }
    }
  }

  func linkChanged(_ link: Link, ready: Bool) {
    linkStates[link] = ready
    if link == .listener && ready { catchUpDue = true }
    if catchUpDue && store.isReadable && store.isListening { catchUp() }
    if link == .reader && ready {
      node.readerUp()
      perform(node.tick(now: loopSeconds, readable: store.isReadable))
    }
  }

  func isUp(_ link: Link) -> Bool {
    switch link {
    case .writer: store.isWritable
    case .reader: store.isReadable
    case .listener: store.isListening
    }
  }

  /// Tokens refused before any signature check and signature checks that failed, since start (`/metrics`).
  var signInCounts: (throttled: Int, failures: Int) { (signInGuard.throttled, signInGuard.failures) }

  func catchUp() {
    catchUpDue = false
    let accounts = node.accounts.sorted()
    guard !accounts.isEmpty else { return }
    logger.info("hosted: catching up after the fleet's channel was not heard", [("accounts", String(accounts.count))])
    for account in accounts { perform(node.othersWrote(account)) }
    services.requestEndOfTurn()
  }

  func pull(_ account: String) {
    guard let tenant = tenants[account], let model = tenant.model else {
      perform(node.pulled(account, success: false, now: loopSeconds))
      return
    }
    store.pull(account, after: model.cursor, limit: 1_000) { [weak self] result in
      guard let self else { return }
      switch result {
      case .failure(let error) where error == .behindRetention:
        // The operations it missed were pruned after a snapshot: the account is read again (as after a failed
        // commit; its requests wait for it, its subscriptions stay, observers hear what moved).
        self.logger.info("hosted: the account was behind the operations kept; reading it again", [("account", account)])
        self.perform(self.node.pulledBehindRetention(account))
        self.services.requestEndOfTurn()
      case .failure(let error):
        self.logger.warning("hosted: catch-up failed; retrying", [("account", account), ("error", error.message)])
        self.perform(self.node.pulled(account, success: false, now: self.loopSeconds))
        self.services.requestEndOfTurn()
      case .success(let rows):
        guard let tenant = self.tenants[account], tenant.model === model else {
          // Read again meanwhile: this pull's rows are not for the engine it has now. The pull still ends (an
          // account left pulling would hold its requests for good); it is tried again from the new cursor.
          self.perform(self.node.pulled(account, success: false, now: self.loopSeconds))
          self.services.requestEndOfTurn()
          return
        }
        if let last = rows.last {
          self.pullReplies(of: tenant)
          let effects = model.applyRemote(
            rows.map(\.operation), cursor: last.cursor, wallNow: System.wallClockSeconds())
          for mutation in effects.mutations { self.services.recordMerged(mutation, in: tenant) }
          if model.outboxCount > 0 { self.touched(tenant) }
          // Other nodes' and devices' changes grow the state too (a device's push through this node is counted
          // twice, at its commit and here: the state is measured again sooner, never later).
          self.charge(tenant, operationBytes: rows.reduce(0) { $0 + $1.payload.utf8.count }, historyRows: 0)
        }
        if rows.count >= 1_000 { _ = self.node.othersWrote(account) }
        self.perform(self.node.pulled(account))
        self.services.requestEndOfTurn()
      }
    }
  }

  /// Others wrote to the account: the replies they stored for idempotency keys are read too, so a retry that comes here
  /// gets the first reply at once (without them it would still change nothing: PostgreSQL refuses the key a second
  /// time, the commit fails, and the retry after -32016 finds the reply read back with the account).
  func pullReplies(of tenant: Tenant) {
    guard let account = tenant.account else { return }
    let window = System.wallClockSeconds() - services.configuration.idempotencyWindow
    // Other nodes' clocks may lag this one's: a minute of slack before the newest reply known.
    let since = max(window, (tenant.idempotency.newest ?? window) - 60)
    store.replies(of: account, since: since) { [weak self, weak tenant] result in
      guard let self, let tenant, self.tenants[account] === tenant, case .success(let replies) = result else { return }
      tenant.idempotency.merge(replies)
    }
  }

  /// Deletes `account` from PostgreSQL and drops it here; answers how many sessions this node closed for it — counted
  /// whether PostgreSQL's notification of the deletion arrives before the commit's answer or after.
  func deleteAccount(_ account: String, completion: @escaping (Result<Int, HostedError>) -> Void) {
    if deleting[account] == nil { deleting[account] = 0 }
    store.deleteAccount(account, erasureDays: configuration.erasureDays) { [weak self] result in
      guard let self else { return }
      let early = self.deleting.removeValue(forKey: account) ?? 0
      completion(result.map { early + self.dropDeleted(account) })
    }
  }

  /// An account erased (here or on another node; `erasedAt` when PostgreSQL said when, else now): its tombstone is
  /// kept here too (tokens issued before the erasure are refused at once), the sessions signed in with such tokens
  /// are closed, it leaves memory; requests waiting for it are refused — but those of a session whose token was
  /// issued after the erasure, which start the account again (``reopen(_:issuedAt:)``).
  func dropDeleted(_ account: String, erasedAt: Double? = nil) -> Int {
    let laid = erasedAt ?? System.wallClockSeconds()
    node.learnErasure(account, erasedAt: laid, until: laid + configuration.erasureDays * 86_400)
    let sessions = closeSessionsOlderThanErasure(of: account)
    if !sessions.isEmpty, deleting[account] != nil { deleting[account, default: 0] += sessions.count }
    perform(node.deleted(account))
    for session in parkedSessions(node.takeWaiters(of: account), on: account) {
      if let issuedAt = session.principal?.issuedAt, erasure(of: account, issuedAt: issuedAt) == nil {
        node.wait(session.id, on: account)
        reopen(account, issuedAt: issuedAt)
        continue
      }
      session.release(from: account, refusal: Self.deletedRefusal(account, for: session))
      services.resumeInput(session)
    }
    return sessions.count
  }

  /// Closes the sessions of `account` signed in with a token its standing tombstone refuses; returns them.
  @discardableResult
  func closeSessionsOlderThanErasure(of account: String) -> [Session] {
    let sessions = sessionsOfAccount(account).filter { erasure(of: account, issuedAt: $0.principal?.issuedAt) != nil }
    for session in sessions {
      closeSession(session, .unauthorized(reason: "deleted", "the account was deleted"))
    }
    return sessions
  }

  /// Starts an erased account again for a session whose token was issued after the erasure (`issuedAt`): its
  /// tombstone in PostgreSQL is marked reopened (it keeps refusing older tokens), then the account is read — empty —
  /// and the sessions parked on it go on. Refused sessions are told why.
  func reopen(_ account: String, issuedAt: Double) {
    guard node.startReopening(account) else { return }
    store.reopenAccount(account, issuedAt: issuedAt) { [weak self] result in
      guard let self else { return }
      switch result {
      case .success(true):
        self.logger.info("hosted: an erased account is started again by a newer token", [("account", account)])
        self.perform(self.node.reopenAnswered(account, .reopened))
      case .success(false):
        // Erased again since the token was issued (on another node): its tombstone is read again.
        self.perform(self.node.reopenAnswered(account, .erasedAgain))
        _ = self.dropDeleted(account)
      case .failure(let error):
        self.failParked(account, self.node.takeWaiters(of: account), reason: error.message)
        self.perform(self.node.reopenAnswered(account, .failed))
      }
    }
  }

  /// Whether `account`'s standing tombstone still keeps it from being read (not reopened yet).
  func awaitsReopening(_ account: String) -> Bool {
    // Asked before every request: no tombstone known, the usual case, costs neither a hash nor the clock.
    guard !node.erasures.tombstones.isEmpty else { return false }
    return node.erasures.awaitsReopening(account, now: System.wallClockSeconds())
  }

  /// How a request for an erased account is refused: a user's session is being closed (-32013 `deleted`); an admin
  /// is told the account is gone.
  static func deletedRefusal(_ account: String, for session: Session) -> ResponseError {
    session.principal?.isAdmin == true
      ? .invalidParams("params.account: account \(account) was deleted (accounts/delete)")
      : .unauthorized(reason: "deleted", "the account was deleted")
  }
}
