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

/// Hosted mode (`tipsd serve --hosted`): one node serves every user of an app, each user's state in PostgreSQL.
///
/// - **Signing in.** A session presents the app's JWT (its `sub` is the account) or the admin token: in the
///   WebSocket upgrade (Bearer header, `tipsd.token.<JWT>` subprotocol) or in `initialize`'s `auth`. It ends when its
///   token stops being accepted unless `auth/refresh` replaces it.
/// - **Tenants.** An account's engine is loaded on its first request (its snapshot and the operations after it),
///   kept while it has sessions, and evicted least recently used past `--max-resident-accounts` (``Residency``).
///   Requests for an account that is loading, committing or catching up wait (their session is parked), so the
///   engine never runs ahead of PostgreSQL by more than the transaction in flight.
/// - **Group commit.** At the end of each loop turn every touched account's operations and history entries go to
///   PostgreSQL in one pipelined transaction (``HostedStore/commit(_:completion:)``); the turn's replies and
///   notifications for those accounts wait for it. A failed commit answers -32016 and reads the accounts again.
/// - **Other nodes and devices.** Their pushes arrive as fleet notifications; a resident account then pulls what it
///   is missing and merges it (the sync model's rules), notifying its observers.
///
/// Loop thread only.
final class HostedService {
  let configuration: HostedConfiguration
  /// Every account's state: PostgreSQL, or memory (`--hosted memory:`).
  let store: any HostedStorage
  private unowned let services: Services
  private let loop: any EventLoop
  private let logger: Logger
  private let catalog: CatalogService
  /// The admin token (`--token-file`, re-read on SIGHUP), if the node has one.
  private var adminToken: String?
  private(set) var verifier: TokenVerifier
  /// The bounds on what signing in costs (a flood of forged tokens): see ``SignInGuard``.
  private var signInGuard: SignInGuard
  /// Sessions not signed in yet, by id, and when they must be (`--sign-in-timeout`; the loop's seconds).
  private var signInDeadlines = DeadlineQueue<UInt64>()
  /// Erased accounts whose tombstone stands, and until when (seconds since the epoch): refused at sign-in and
  /// admission. PostgreSQL's `tipsd.erased` is the authority (loads and commits check it); this is its copy, read at
  /// start and kept by deletion notices.
  private(set) var erased: [String: Double] = [:]
  private var erasedRead = false
  private var readingErased = false
  private var residency: Residency
  private(set) var tenants: [String: Tenant] = [:]
  /// Sessions waiting for an account to be idle, by account.
  private var parked: [String: [Session]] = [:]
  /// Accounts with changes or history entries to commit at the end of this turn.
  private var touchedThisTurn: [Tenant] = []
  private var limiter: RateLimiter
  /// When each resident account's engine next changes with time.
  private var timeQueue = DeadlineQueue<String>()
  /// When each signed-in user session's token stops being accepted, by session id.
  private var expiries = DeadlineQueue<UInt64>()
  private var sessionsByID: [UInt64: Session] = [:]
  private var timeTimer: (any LoopTimer)?
  private var timeTimerAt: Double?
  private var housekeeping: (any LoopTimer)?
  /// Accounts this node committed to with more than `--compaction-threshold` operations after their snapshot, and
  /// whether the compactor is working.
  private var compactionDue: [String: Int64] = [:]
  /// Accounts an admin is deleting through this node: the sessions closed meanwhile (by PostgreSQL's notification).
  private var deleting: [String: Int] = [:]
  private var compacting = false
  /// Seconds until the housekeeping next deletes history older than `--history-days` (at the first tick PostgreSQL
  /// accepts changes, then hourly), and whether it is deleting.
  private var untilHistoryPrune = 0
  private var pruning = false
  private let clock: any EngineClock
  private var writable = false
  private var everWritable = false

  /// A commit in flight: the accounts in it, what each pushed, and the sessions whose output waits for it.
  private struct Batch {
    var accounts: [String] = []
    var pushed: [String: [Int64]] = [:]
    var historyCounts: [String: Int] = [:]
    var streamed: [String: [HistoryEvent]] = [:]
    var sessions: [Session] = []
  }
  private var batches: [UInt64: Batch] = [:]
  private var nextBatch: UInt64 = 0
  /// History entries recorded this turn that the analytics stream carries once committed, by account.
  private var streamedThisTurn: [String: [HistoryEvent]] = [:]

  // Hooks into the server.
  /// Hand the output of these sessions over: their commit succeeded (true) or failed.
  var release: ([Session], Bool) -> Void = { _, _ in }
  /// Close a session after sending it this error (id null).
  var closeSession: (Session, ResponseError) -> Void = { _, _ in }
  /// Reload the catalog file (another node reloaded its catalog).
  var reloadCatalog: (String) -> Void = { _ in }
  /// The sessions signed in to an account and not already closing, from the server's sessions.
  var sessionsOfAccount: (String) -> [Session] = { _ in [] }

  init(
    configuration: HostedConfiguration, services: Services, loop: any EventLoop, logger: Logger,
    catalog: CatalogService, clock: any EngineClock
  ) throws(ServerError) {
    self.configuration = configuration
    self.services = services
    self.loop = loop
    self.logger = logger
    self.catalog = catalog
    if let file = configuration.adminTokenFile { adminToken = try TokenFile.ensure(file).token }
    if let file = configuration.jwtSecretFile { try TokenFile.checkPrivate(file, what: "the JWT secret file") }
    signInGuard = SignInGuard(SignInGuard.Configuration(failureRate: configuration.signInFailureRate))
    self.clock = clock
    do {
      verifier = try TokenVerifier.load(
        secretFile: configuration.jwtSecretFile, jwksFile: configuration.jwksFile, audiences: configuration.audiences,
        issuer: configuration.issuer, leeway: configuration.leeway)
    } catch {
      throw ServerError("--hosted: \(error)")
    }
    if configuration.server == HostedConfiguration.memory {
      let memory = MemoryHostedStore(loop: loop)
      memory.nodeName = configuration.node
      store = memory
    } else {
      let server: SyncServer
      do {
        server = try SyncServer(configuration.server)
      } catch {
        throw ServerError("--hosted: \(error.message)")
      }
      var storeConfiguration = HostedStore.Configuration(server: server, node: configuration.node)
      storeConfiguration.answerTimeout = configuration.postgresTimeout
      store = HostedStore(loop: loop, configuration: storeConfiguration, logger: logger)
    }
    residency = Residency(capacity: configuration.maxResidentAccounts)
    limiter = RateLimiter(rate: configuration.accountRate)
    store.onNotice = { [unowned self] notice in self.noticed(notice) }
    store.onLinkChange = { [unowned self] link, ready in self.linkChanged(link, ready: ready) }
    store.onWritableChange = { [unowned self] writable in
      // Once connected: the first connection is not news, losing it and getting it back are.
      guard writable != self.writable else { return }
      if writable && !self.everWritable {
        self.everWritable = true
        self.writable = true
        return
      }
      self.writable = writable
      self.logger.log(
        writable ? .notice : .warning,
        writable
          ? "hosted: PostgreSQL accepts changes again" : "hosted: PostgreSQL is unavailable; changes are refused",
        [("node", self.configuration.node)])
    }
    logger.info(
      "hosted mode",
      [
        ("postgres", store.serverDescription), ("node", configuration.node),
        ("max_resident_accounts", String(configuration.maxResidentAccounts)),
        ("account_rate", String(configuration.accountRate)),
      ])
  }

  func start() {
    store.start()
    let tick = loop.makeTimer()
    tick.keepsLoopAlive = false
    tick.start(afterMilliseconds: 1_000, repeatEvery: 1_000) { [unowned self] in self.everySecond() }
    housekeeping = tick
  }

  func stop() {
    housekeeping?.close()
    timeTimer?.close()
    store.stop()
  }

  /// Reads the JWT secret and JWKS files and the admin token again (SIGHUP); a broken file keeps what is in force.
  func reloadKeys() {
    do {
      if let file = configuration.jwtSecretFile { try TokenFile.checkPrivate(file, what: "the JWT secret file") }
      verifier = try TokenVerifier.load(
        secretFile: configuration.jwtSecretFile, jwksFile: configuration.jwksFile, audiences: configuration.audiences,
        issuer: configuration.issuer, leeway: configuration.leeway)
      signInGuard.keysReloaded()
      logger.info("hosted: signing keys reloaded")
    } catch {
      logger.error("hosted: signing keys not reloaded; the keys in force stay", [("error", "\(error)")])
    }
    guard let file = configuration.adminTokenFile else { return }
    do {
      adminToken = try TokenFile.read(file)
      logger.info("hosted: admin token reloaded", [("token_file", file)])
    } catch {
      logger.error("hosted: admin token not reloaded; the one in force stays", [("error", "\(error)")])
    }
  }

  /// The token the HTTP listener's `/metrics` asks for: the admin token, when the node has one.
  var adminTokenForListener: String? { adminToken }

  // MARK: - Signing in

  /// The per-peer limiter and its clock: failed sign-ins are charged to the peer's connection rate, and a peer over
  /// its rate is refused (`tooManyAttempts`) without its token being verified. Set by the server.
  var signInLimiter: (limiter: ConnectionLimiter, now: () -> Double)?

  /// Who `token` signs in, for a session connected from `peer`: as ``authenticate(_:)``, with failures charged to the
  /// peer and a peer over its rate refused before any signature is checked (when per-peer limits are on: a node
  /// behind a balancer sees one peer and has them off).
  func authenticate(_ token: String, peer: String?) -> Result<Principal, ResponseError> {
    guard let peer, let (limiter, now) = signInLimiter, limiter.limits.ratePerPeer > 0 else {
      return authenticate(token)
    }
    if let wait = limiter.retryAfter(peer, now: now()) {
      let refusal = ConnectionRefusal.rate(limit: limiter.limits.ratePerPeer, retryAfter: wait)
      return .failure(
        .unauthorized(reason: "tooManyAttempts", "too many failed sign-ins: \(refusal)", retryAfter: wait))
    }
    let result = authenticate(token)
    if case .failure = result { limiter.charge(peer, now: now()) }
    return result
  }

  /// Who `token` signs in: the admin, or a user whose account is its `sub` — at a bounded cost whatever arrives. Its
  /// size is checked first (nothing longer than a token is compared or parsed); the admin token in constant time;
  /// a token verified before is taken from memory; a new one's claims are checked before its signature, and its
  /// signature only within the node's budget of failed checks (``SignInGuard``). An erased account is refused.
  func authenticate(_ token: String) -> Result<Principal, ResponseError> {
    let maxBytes = verifier.configuration.maxTokenBytes
    guard token.utf8.count <= maxBytes else {
      return .failure(.unauthorized(reason: "tooLarge", "the token is longer than \(maxBytes) bytes"))
    }
    if let adminToken, AccessPolicy.constantTimeEqual(token, adminToken) { return .success(.admin) }
    let now = System.wallClockSeconds()
    if let known = signInGuard.remembered(token, now: now) {
      if let refusal = erasure(of: known.subject) { return .failure(refusal) }
      return .success(.user(account: known.subject, expiresAt: known.expiresAt, acceptedUntil: known.acceptedUntil))
    }
    var claimed: String?
    let result = verifier.verify(token, now: now) { [unowned self] claims in
      claimed = claims.subject
      guard let wait = self.signInGuard.mayCheck(subject: claims.subject, now: now) else { return nil }
      return AuthError(
        .throttled,
        "the node is refusing new tokens for \(Self.seconds(wait)) s (too many forged ones arrived); retry then")
    }
    switch result {
    case .success(let verified):
      signInGuard.succeeded(
        token,
        SignInGuard.Remembered(
          subject: verified.subject, expiresAt: verified.expiresAt, acceptedUntil: verified.acceptedUntil), now: now)
      if let refusal = erasure(of: verified.subject) { return .failure(refusal) }
      return .success(
        .user(account: verified.subject, expiresAt: verified.expiresAt, acceptedUntil: verified.acceptedUntil))
    case .failure(let error):
      if error.code == .badSignature, let claimed { signInGuard.failed(subject: claimed, now: now) }
      var retryAfter: Double?
      if error.code == .throttled, let claimed {
        retryAfter = signInGuard.mayCheck(subject: claimed, now: now) ?? 0.001
      }
      return .failure(.unauthorized(reason: error.code.rawValue, error.message, retryAfter: retryAfter))
    }
  }

  /// A sign-in attempt on `session` (`initialize`'s token, or `auth/refresh`'s): refreshes are rationed per
  /// connection, and a connection that failed too many sign-ins is closed after this reply.
  func signInAttempt(_ token: String, on session: Session, refresh: Bool) -> Result<Principal, ResponseError> {
    let now = System.monotonicSeconds()
    if refresh, let wait = session.signIn.takeRefresh(now: now, perMinute: configuration.refreshesPerMinute) {
      return .failure(
        .unauthorized(
          reason: "tooManyAttempts",
          "at most \(Int(configuration.refreshesPerMinute)) auth/refresh a minute on one connection",
          retryAfter: wait))
    }
    let result = authenticate(token, peer: session.peer)
    if case .failure = result {
      session.signIn.failures += 1
      if session.signIn.failures >= configuration.maxFailedSignInsPerConnection {
        logger.info(
          "hosted: closing a connection after repeated failed sign-ins",
          [("connection", String(session.id)), ("failures", String(session.signIn.failures))])
        closeSession(
          session,
          .unauthorized(
            reason: "tooManyAttempts",
            "\(session.signIn.failures) failed sign-ins on this connection; it is closed (open a new one)"))
      }
    }
    return result
  }

  /// Refused when the account was erased and its tombstone stands.
  private func erasure(of account: String) -> ResponseError? {
    guard let until = erased[account], until > System.wallClockSeconds() else { return nil }
    return .unauthorized(reason: "deleted", "the account was deleted")
  }

  private static func seconds(_ value: Double) -> String { String(Double(Int((value * 1000).rounded(.up))) / 1000) }

  /// A session signed in (or its token was refreshed): its expiry is watched, its account made resident and counted
  /// from its first session. A session signs in one account for its life: a token for another (or the admin token on
  /// a user's session, or the reverse) is refused, not switched to.
  func signedIn(_ session: Session, as principal: Principal) -> ResponseError? {
    let previous = session.principal
    if let previous, previous.account != principal.account || previous.isAdmin != principal.isAdmin {
      return .unauthorized(
        reason: "subjectChanged",
        "the session is signed in as another account; a connection signs in one account (open another connection)")
    }
    session.principal = principal
    sessionsByID[session.id] = session
    signInDeadlines.set(session.id, nil)
    switch principal {
    case .user(let account, _, let until):
      expiries.set(session.id, until)
      if previous == nil {
        perform(residency.need(account))
        residency.sessionOpened(account)
      }
    case .admin:
      // The admin token does not expire: the session does, --admin-session-max after it signed in.
      if previous == nil { expiries.set(session.id, System.wallClockSeconds() + configuration.adminSessionMax) }
    }
    return nil
  }

  /// The loop's clock in seconds (durations: the sign-in deadline).
  private var loopSeconds: Double { Double(loop.now) / 1000 }

  /// A new connection: it must sign in within `--sign-in-timeout` (unless its upgrade's token already did).
  func accepted(_ session: Session) {
    guard session.principal == nil else { return }
    sessionsByID[session.id] = session
    signInDeadlines.set(session.id, loopSeconds + configuration.signInTimeout)
  }

  /// What `initialize` answers about the sign-in.
  func signIn(of principal: Principal) -> SignIn {
    switch principal {
    case .admin: SignIn(account: nil, admin: true, expiresAt: nil)
    case .user(let account, let expiresAt, _): SignIn(account: account, admin: false, expiresAt: expiresAt)
    }
  }

  /// The session is gone: its account may be evicted, its subscriptions go.
  func closed(_ session: Session) {
    for id in session.subscriptions where fleetSubscribers[id]?.session === session { fleetSubscribers[id] = nil }
    sessionsByID[session.id] = nil
    expiries.set(session.id, nil)
    signInDeadlines.set(session.id, nil)
    if let account = session.parkedOn { parked[account]?.removeAll { $0 === session } }
    for account in session.subscribedAccounts { tenants[account]?.subscriptions.removeAll(of: session) }
    if let account = session.principal?.account { perform(residency.sessionClosed(account)) }
  }

  // MARK: - Which tenant a request acts on

  /// The account a session's request acts on: the user's own, or the one an admin named (`params.account`).
  func account(for session: Session, named: String?, method: String) -> Result<String, ResponseError> {
    guard let principal = session.principal else {
      return .failure(
        .unauthorized(
          reason: "missing", "\(method): sign in first (initialize's auth.token, or a token on the connection)"))
    }
    switch principal {
    case .admin:
      guard let named else {
        return .failure(.invalidParams("\(method): params.account: an admin session names the account it acts on"))
      }
      guard Subject.problem(named) == nil else {
        return .failure(.invalidParams("\(method): params.account: not an account id"))
      }
      if erasure(of: named) != nil { return .failure(Self.deletedRefusal(named, for: session)) }
      return .success(named)
    case .user(let own, _, _):
      if let named, named != own {
        return .failure(.forbidden(method: method, "a session acts on its own account only"))
      }
      if let refusal = erasure(of: own) { return .failure(refusal) }
      return .success(own)
    }
  }

  /// Whether the account is idle (its engine may be used now); else it is loaded if absent and the session is
  /// parked until it is idle — or refused, when its load failed at once.
  func ready(_ account: String, for session: Session) -> Readiness {
    perform(residency.need(account))
    if residency.isIdle(account), let tenant = tenants[account] { return .ready(tenant) }
    guard residency.phase(of: account) != nil else {
      // Its load failed before it could wait (PostgreSQL unreachable as the node started, say): answered now, not
      // parked on a load that is no longer coming.
      let reason = loadFailure[account] ?? "the account could not be read"
      return .refused(.unavailable(method: "request", retryAfter: 1, "PostgreSQL: \(reason)"))
    }
    session.parkedOn = account
    parked[account, default: []].append(session)
    return .wait
  }

  /// Whether a request for an account may run now.
  enum Readiness {
    case ready(Tenant)
    /// Not yet: the session was parked until the account is idle.
    case wait
    case refused(ResponseError)
  }

  /// The account's request rate (`--account-rate`), for a user's request; nil when within it.
  func admitRate(_ account: String, session: Session) -> ResponseError? {
    guard session.principal?.isAdmin != true else { return nil }
    guard let wait = limiter.take(account, now: clock.now()) else { return nil }
    return .quotaExceeded(
      method: "request", quota: "rate", limit: Int(configuration.accountRate), retryAfter: wait,
      "more than \(Int(configuration.accountRate)) requests a second for this account (--account-rate)")
  }

  /// Whether an account may keep one more donation (`--account-max-donations`).
  func donationQuota(_ tenant: Tenant, method: String) -> ResponseError? {
    var kept = 0
    for event in tenant.engine.eventIDs { kept += tenant.engine.donations(event).count }
    guard kept >= configuration.accountMaxDonations else { return nil }
    return .quotaExceeded(
      method: method, quota: "donations", limit: configuration.accountMaxDonations, retryAfter: nil,
      "the account keeps \(kept) donations (--account-max-donations \(configuration.accountMaxDonations))")
  }

  // MARK: - Residency's actions

  private func perform(_ actions: [Residency.Action]) {
    for action in actions {
      switch action {
      case .load(let account): load(account)
      case .resume(let account): resumeParked(account)
      case .failWaiters(let account): failParked(account)
      case .pull(let account): pull(account)
      case .retryPull(let account): schedulePullRetry(account)
      case .evict(let account): evict(account)
      }
    }
  }

  private func load(_ account: String) {
    store.load(account) { [weak self] result in
      guard let self else { return }
      switch result {
      case .success(let stored) where stored.erased:
        // Erased meanwhile (on another node, whose notice this node may have missed): refused, not recreated.
        self.logger.info("hosted: an erased account was asked for; refused", [("account", account)])
        _ = self.dropDeleted(account)
      case .success(let stored):
        do {
          try self.install(account, from: stored)
          self.perform(self.residency.loaded(account, success: true))
        } catch {
          self.logger.error("hosted: cannot load an account", [("account", account), ("error", "\(error)")])
          self.orphan(account)
          self.perform(self.residency.loaded(account, success: false))
        }
      case .failure(let error):
        self.logger.warning("hosted: cannot load an account", [("account", account), ("error", error.message)])
        self.loadFailure[account] = error.message
        self.orphan(account)
        self.perform(self.residency.loaded(account, success: false))
      }
    }
  }

  /// Accounts whose reload failed (a failed commit's, as PostgreSQL went away): no longer resident, their tenant
  /// still holds the engine as it was and their sessions' subscriptions — nothing catches them up, no notice is
  /// heard for them, until they are read again. Read again as soon as PostgreSQL can be read (or dropped, once no
  /// session is left).
  private var orphans: Set<String> = []

  private func orphan(_ account: String) {
    guard tenants[account] != nil else { return }
    orphans.insert(account)
  }

  private func reloadOrphans() {
    guard !orphans.isEmpty, store.isReadable else { return }
    let accounts = orphans.sorted()
    orphans.removeAll()
    for account in accounts where tenants[account] != nil && residency.phase(of: account) == nil {
      if residency.sessions(of: account) > 0 {
        logger.info("hosted: reading an account again after its reload failed", [("account", account)])
        perform(residency.need(account))
      } else {
        evict(account)
      }
    }
  }

  /// Why the last load of an account failed, for the requests that waited.
  private var loadFailure: [String: String] = [:]

  /// A fresh engine for `account`: the catalog registered, variants assigned from the account id.
  func makeEngine(account: String) throws -> Engine {
    let engine = Engine(clock: clock, configuration: EngineConfiguration(canonicalDonationOrder: true))
    _ = try engine.setInstallID(account)
    _ = try catalog.current.register(in: engine)
    return engine
  }

  /// Builds (or rebuilds, after a failed commit) the account's tenant from what PostgreSQL holds. A rebuilt tenant
  /// keeps its subscriptions; observers are told of every tip whose value the reload changed.
  private func install(_ account: String, from stored: HostedStore.StoredAccount) throws {
    let engine = try makeEngine(account: account)
    let (model, skipped) = try AccountLoader.load(
      account: account, device: configuration.node, engine: engine, snapshot: stored.snapshot,
      operations: stored.operations, wallNow: System.wallClockSeconds())
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
    let window = System.wallClockSeconds() - services.configuration.idempotencyWindow
    tenants[account]?.idempotency.load(stored.replies.filter { $0.at >= window })
    loadFailure[account] = nil
    // A budget reached by merged displays may have queued an operation of this node's: commit it.
    if model.outboxCount > 0, let tenant = tenants[account] { touched(tenant) }
    updateTime(of: account)
  }

  private func resumeParked(_ account: String) {
    updateTime(of: account)
    guard let waiting = parked.removeValue(forKey: account) else { return }
    for session in waiting where session.parkedOn == account {
      session.parkedOn = nil
      services.resumeInput(session)
    }
  }

  private func failParked(_ account: String) {
    guard let waiting = parked.removeValue(forKey: account) else { return }
    let reason = loadFailure[account] ?? "the account could not be read"
    for session in waiting where session.parkedOn == account {
      session.parkedOn = nil
      session.failParked = .unavailable(method: "request", retryAfter: 1, "PostgreSQL: \(reason)")
      services.resumeInput(session)
    }
  }

  private func evict(_ account: String) {
    tenants[account] = nil
    timeQueue.set(account, nil)
    logger.debug("hosted: account evicted", [("account", account)])
  }

  // MARK: - Other nodes and devices

  private func noticed(_ notice: HostedStore.Notice) {
    switch notice {
    case .operations(let account, let cursor):
      // An account still loading has no model yet: what its load read may predate this operation, so it pulls once
      // loaded (the residency knows it only while it is held or loading).
      if let model = tenants[account]?.model, cursor <= model.cursor { return }
      perform(residency.othersWrote(account))
    case .deleted(let account):
      _ = dropDeleted(account)
    case .catalog(let version):
      guard version != catalog.version else { return }
      reloadCatalog("another node reloaded it")
      if catalog.version != version {
        logger.warning(
          "hosted: another node serves another catalog version than this node's file",
          [("theirs", version), ("ours", catalog.version ?? "none")])
      }
    }
  }

  /// Pulls that failed, by account: when to try again and how many failed in a row (backoff 1 s doubling to 30 s).
  private var pullRetries = DeadlineQueue<String>()
  private var pullFailures: [String: Int] = [:]

  private func schedulePullRetry(_ account: String) {
    let failures = (pullFailures[account] ?? 0) + 1
    pullFailures[account] = failures
    pullRetries.set(account, loopSeconds + min(30, Double(1 << min(failures - 1, 5))))
  }

  /// Links (re)established since the last catch-up: the listener was not listening for a while (or never had), so
  /// what other nodes and devices committed meanwhile may never have been heard — every resident account pulls from
  /// its cursor once the reader is up.
  private var catchUpDue = false

  private func linkChanged(_ link: Link, ready: Bool) {
    linkStates[link] = ready
    if link == .listener && ready { catchUpDue = true }
    if catchUpDue && store.isReadable && store.isListening { catchUp() }
    if link == .reader && ready { reloadOrphans() }
  }

  /// Whether each link is up (`/healthz`, `tipsd_hosted_links`).
  private(set) var linkStates: [Link: Bool] = [:]

  func isUp(_ link: Link) -> Bool {
    switch link {
    case .writer: store.isWritable
    case .reader: store.isReadable
    case .listener: store.isListening
    }
  }

  /// Tokens refused before any signature check and signature checks that failed, since start (`/metrics`).
  var signInCounts: (throttled: Int, failures: Int) { (signInGuard.throttled, signInGuard.failures) }

  private func catchUp() {
    catchUpDue = false
    let accounts = residency.accounts.sorted()
    guard !accounts.isEmpty else { return }
    logger.info("hosted: catching up after the fleet's channel was not heard", [("accounts", String(accounts.count))])
    for account in accounts { perform(residency.othersWrote(account)) }
    services.requestEndOfTurn()
  }

  private func pull(_ account: String) {
    guard let tenant = tenants[account], let model = tenant.model else {
      perform(residency.pulled(account, success: false))
      return
    }
    store.pull(account, after: model.cursor, limit: 1_000) { [weak self] result in
      guard let self else { return }
      switch result {
      case .failure(let error):
        self.logger.warning("hosted: catch-up failed; retrying", [("account", account), ("error", error.message)])
        self.perform(self.residency.pulled(account, success: false))
        self.services.requestEndOfTurn()
      case .success(let rows):
        self.pullFailures[account] = nil
        guard let tenant = self.tenants[account], tenant.model === model else {
          // Read again meanwhile: this pull's rows are not for the engine it has now. The pull still ends (an
          // account left pulling would hold its requests for good); it is tried again from the new cursor.
          self.perform(self.residency.pulled(account, success: false))
          self.services.requestEndOfTurn()
          return
        }
        if let last = rows.last {
          self.pullReplies(of: tenant)
          let effects = model.applyRemote(
            rows.map(\.operation), cursor: last.cursor, wallNow: System.wallClockSeconds())
          for mutation in effects.mutations { self.services.recordMerged(mutation, in: tenant) }
          if model.outboxCount > 0 { self.touched(tenant) }
        }
        if rows.count >= 1_000 { _ = self.residency.othersWrote(account) }
        self.perform(self.residency.pulled(account))
        self.services.requestEndOfTurn()
      }
    }
  }

  /// Others wrote to the account: the replies they stored for idempotency keys are read too, so a retry that comes here
  /// gets the first reply at once (without them it would still change nothing: PostgreSQL refuses the key a second
  /// time, the commit fails, and the retry after -32016 finds the reply read back with the account).
  private func pullReplies(of tenant: Tenant) {
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

  /// An account erased (here or on another node): its tombstone is kept here too (sign-ins and requests for it are
  /// refused at once), its sessions are closed, it leaves memory; requests waiting for it are refused.
  func dropDeleted(_ account: String) -> Int {
    erased[account] = max(erased[account] ?? 0, System.wallClockSeconds() + configuration.erasureDays * 86_400)
    let sessions = sessionsOfAccount(account)
    if !sessions.isEmpty, deleting[account] != nil { deleting[account, default: 0] += sessions.count }
    for session in sessions {
      closeSession(session, .unauthorized(reason: "deleted", "the account was deleted"))
    }
    perform(residency.deleted(account))
    if let waiting = parked.removeValue(forKey: account) {
      for session in waiting where session.parkedOn == account {
        session.parkedOn = nil
        session.failParked = Self.deletedRefusal(account, for: session)
        services.resumeInput(session)
      }
    }
    return sessions.count
  }

  /// How a request for an erased account is refused: a user's session is being closed (-32013 `deleted`); an admin
  /// is told the account is gone.
  private static func deletedRefusal(_ account: String, for session: Session) -> ResponseError {
    session.principal?.isAdmin == true
      ? .invalidParams("params.account: account \(account) was deleted (accounts/delete)")
      : .unauthorized(reason: "deleted", "the account was deleted")
  }

  // MARK: - Committing

  /// The account has changes or history entries for this turn's commit.
  func touched(_ tenant: Tenant) {
    guard !tenant.touched else { return }
    tenant.touched = true
    touchedThisTurn.append(tenant)
  }

  /// History entries the analytics stream carries once this turn's commit gives them their cursors.
  func streamAfterCommit(_ entries: [HistoryEvent], of tenant: Tenant) {
    guard let account = tenant.account else { return }
    streamedThisTurn[account, default: []] += entries
  }

  /// The end of a loop turn: every touched account's changes go to PostgreSQL in one transaction. Returns the
  /// sessions whose output must wait for it (the caller hands the others' over now).
  func commitTurn(dirty: [Session]) -> Set<ObjectIdentifier> {
    let touched = touchedThisTurn
    touchedThisTurn.removeAll(keepingCapacity: true)
    var changes: [HostedStore.AccountChanges] = []
    var batch = Batch()
    for tenant in touched {
      tenant.touched = false
      guard let account = tenant.account, let model = tenant.model else { continue }
      // Being read from PostgreSQL (a failed commit's reload): what this turn queued for it — a pull's merge that
      // reached a budget — is rebuilt by the reload, and a commit now would make the account busy under the load,
      // whose completion would then be ignored (its requests waited for good). No request ran on it: they wait.
      if let phase = residency.phase(of: account), phase == .loading || phase == .reloading { continue }
      if !tenant.variantsStored {
        tenant.variantsStored = true
        _ = model.storeUnrecordedVariants(wallNow: System.wallClockSeconds())
      }
      let operations = model.outboxBatch(.max)
      let chunks = tenant.pendingHistory.encodedChunks.map {
        HostedStore.HistoryChunk(count: $0.count, firstAt: $0.oldestAt, lastAt: $0.newestAt, bytes: $0.bytes)
      }
      tenant.pendingHistory.removeAll()
      let replies = tenant.idempotency.takeStaged()
      guard !operations.isEmpty || !chunks.isEmpty || !replies.isEmpty else { continue }
      changes.append(
        HostedStore.AccountChanges(account: account, operations: operations, history: chunks, replies: replies))
      batch.accounts.append(account)
      batch.pushed[account] = operations.map(\.seq)
      batch.historyCounts[account] = chunks.reduce(0) { $0 + $1.count }
      if let streamed = streamedThisTurn.removeValue(forKey: account) { batch.streamed[account] = streamed }
      residency.committing(account)
    }
    streamedThisTurn.removeAll()
    var held: Set<ObjectIdentifier> = []
    for session in dirty where session.heldForCommit {
      session.heldForCommit = false
      guard !changes.isEmpty else { continue }
      held.insert(ObjectIdentifier(session))
      batch.sessions.append(session)
    }
    guard !changes.isEmpty else { return held }
    nextBatch += 1
    let id = nextBatch
    for session in batch.sessions { session.awaitingBatch = id }
    batches[id] = batch
    store.commit(changes) { [weak self] result in self?.committed(id, result) }
    return held
  }

  private func committed(_ id: UInt64, _ result: Result<[String: HostedStore.Committed], HostedError>) {
    guard let batch = batches.removeValue(forKey: id) else { return }
    var success = true
    /// Accounts erased meanwhile: PostgreSQL stored nothing of this commit for them.
    var erasedNow: [String] = []
    switch result {
    case .success(let answers):
      for account in batch.accounts {
        if answers[account]?.erased == true {
          erasedNow.append(account)
          continue
        }
        guard let tenant = tenants[account], let model = tenant.model else {
          perform(residency.committed(account, success: false))
          continue
        }
        let pushed = batch.pushed[account] ?? []
        _ = model.pushed(pushed)
        let answer = answers[account]
        if let last = answer?.lastCursor, !model.advanceCursorAfterPush(pushed: pushed.count, lastCursor: last) {
          _ = residency.othersWrote(account)
        }
        if let last = answer?.lastCursor, last - tenant.snapshotCursor > Int64(configuration.compactionThreshold) {
          compactionDue[account] = last
        }
        if let first = answer?.historyFirst.first, let count = batch.historyCounts[account], count > 0 {
          let provisionalLast = tenant.history.lastCursor
          let provisionalFirst = provisionalLast - Int64(count) + 1
          tenant.history.committed(lastCursor: first + Int64(count) - 1)
          if let streamed = batch.streamed[account], tenant.subscriptions.hasAnalyticsSubscribers {
            let moved = streamed.map { entry -> HistoryEvent in
              var entry = entry
              entry.cursor = first + (entry.cursor - provisionalFirst)
              return entry
            }
            for (session, note) in tenant.subscriptions.analyticsNotifications(for: moved[...]) {
              services.stage(.notification(note), on: session)
            }
          }
        }
        tenant.committedHistory = tenant.history.state
        perform(residency.committed(account, success: true))
      }
    case .failure(let error):
      success = false
      logger.warning(
        "hosted: commit failed; the accounts are read again",
        [("accounts", String(batch.accounts.count)), ("error", error.message)])
      for account in batch.accounts { perform(residency.committed(account, success: false)) }
    }
    for session in batch.sessions where session.awaitingBatch == id { session.awaitingBatch = nil }
    if erasedNow.isEmpty {
      release(batch.sessions, success)
    } else {
      // Their sessions' changes were not stored: not acknowledged (and the sessions are being closed).
      let gone = Set(erasedNow)
      let lost = batch.sessions.filter { $0.principal?.account.map(gone.contains) == true }
      release(batch.sessions.filter { $0.principal?.account.map(gone.contains) != true }, success)
      release(lost, false)
      for account in erasedNow { _ = dropDeleted(account) }
    }
    for session in batch.sessions { services.resumeInput(session) }
    services.requestEndOfTurn()
  }

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

  private func timePassed() {
    let now = clock.now()
    for account in timeQueue.popDue(now) {
      guard let tenant = tenants[account] else { continue }
      guard residency.isIdle(account) else {
        // Busy: looked at again once idle (``resumeParked`` re-reads its next change).
        continue
      }
      services.record(tenant.engine.advanceTime(), in: tenant)
      updateTime(of: account)
    }
    services.requestEndOfTurn()
  }

  /// The touched accounts' next changes (their engines moved this turn).
  func afterTurn() {
    rearmTime()
  }

  private func everySecond() {
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
    signInGuard.tidy(now: now)
    for account in pullRetries.popDue(loopSeconds) where residency.phase(of: account) != nil {
      perform(residency.othersWrote(account))
    }
    reloadOrphans()
    erased = erased.filter { $0.value > now }
    if !erasedRead && !readingErased && store.isReadable { readErased() }
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
  private func readErased() {
    readingErased = true
    store.erasedAccounts { [weak self] result in
      guard let self else { return }
      self.readingErased = false
      guard case .success(let rows) = result else { return }
      self.erasedRead = true
      for (account, until) in rows { self.erased[account] = max(self.erased[account] ?? 0, until) }
    }
  }

  /// Seconds between deletions of history older than `--history-days`.
  static let historyPruneInterval = 3_600
  /// History chunks deleted per statement (another follows while each deletes this many).
  static let historyPruneBatch = 10_000

  /// Deletes the fleet's history older than `--history-days`, whatever the setting was when it was written (with
  /// `--history-days 0`, all of it), in bounded statements so no single one holds locks for long.
  private func pruneHistory() {
    let configuration = services.configuration
    let cutoff =
      configuration.recordsHistory ? System.wallClockSeconds() - configuration.historyDays * 86_400 : .infinity
    pruning = true
    var total = 0
    func step() {
      store.pruneHistory(before: cutoff, limit: Self.historyPruneBatch) { [weak self] result in
        guard let self else { return }
        switch result {
        case .success(let count):
          total += count
          if count == Self.historyPruneBatch { return step() }
          if total > 0 { self.logger.info("hosted: old history deleted", [("chunks", String(total))]) }
          self.store.pruneErased { result in
            if case .success(let count) = result, count > 0 {
              self.logger.info("hosted: fallen tombstones deleted", [("accounts", String(count))])
            }
          }
          self.pruneReplies()
        case .failure(let error):
          self.logger.warning("hosted: old history not deleted", [("error", error.message)])
        }
        self.pruning = false
      }
    }
    step()
  }

  /// Deletes the idempotency keys older than `--idempotency-hours` (every account's, in bounded statements) and
  /// forgets them in the resident accounts.
  private func pruneReplies() {
    let cutoff = System.wallClockSeconds() - services.configuration.idempotencyWindow
    for tenant in tenants.values { tenant.idempotency.forget(before: cutoff) }
    var total = 0
    func step() {
      store.pruneReplies(before: cutoff, limit: Self.historyPruneBatch) { [weak self] result in
        guard let self else { return }
        if case .success(let count) = result {
          total += count
          if count == Self.historyPruneBatch { return step() }
        }
        if total > 0 { self.logger.info("hosted: old idempotency keys deleted", [("keys", String(total))]) }
      }
    }
    step()
  }

  // MARK: - Compaction

  /// Accounts compacted at most per second (one after the other, each one read, folded and written).
  static let compactionBatch = 16

  /// Writes new snapshots of the accounts this node committed to past `--compaction-threshold` operations after
  /// their snapshot, so loading an account reads its snapshot and a few operations rather than its whole past (no
  /// scan of every account: a node compacts what its own commits grew). A snapshot is a pure function of what
  /// PostgreSQL holds (the snapshot and the operations after it, read in one statement), so any node may write it,
  /// two nodes writing one at once agree, and an older one never replaces a newer one. Operations before a snapshot
  /// stay in `tipsd.ops` (devices that sync read them from their cursor).
  private func compact() {
    guard !compacting, writable, !compactionDue.isEmpty else { return }
    let threshold = Int64(configuration.compactionThreshold)
    var accounts: [String] = []
    for (account, last) in compactionDue.sorted(by: { $0.key < $1.key }) where accounts.count < Self.compactionBatch {
      compactionDue[account] = nil
      // Compacted since (by this node) far enough: nothing to do yet.
      if let tenant = tenants[account], last - tenant.snapshotCursor <= threshold { continue }
      accounts.append(account)
    }
    guard !accounts.isEmpty else { return }
    compacting = true
    compact(accounts[...], written: 0)
  }

  private func compact(_ accounts: ArraySlice<String>, written: Int) {
    guard let account = accounts.first else {
      compacting = false
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
          self.compact(rest, written: written + 1)
        case .failure(let error):
          self.logger.warning("hosted: snapshot not written", [("account", account), ("error", error.message)])
          self.compact(rest, written: written)
        }
      }
    }
  }

  // MARK: - History

  /// The account's history bounds in PostgreSQL (nil when they cannot be read: the caller answers without them).
  func bounds(of tenant: Tenant, _ done: @escaping ((oldestCursor: Int64?, oldestAt: Double?)?) -> Void) {
    guard let account = tenant.account else { return done(nil) }
    store.historyBounds(account) { done(try? $0.get()) }
  }

  /// The account's stored history after `cursor`, oldest first, the entries `wanted` keeps, at most `limit` (nil:
  /// all). Everything of an idle account is stored (no commit of it is in flight), so nothing is missed.
  func history(
    of account: String, after cursor: Int64, limit: Int?, wanted: @escaping (HistoryEvent) -> Bool,
    completion: @escaping (Result<[HistoryEvent], ResponseError>) -> Void
  ) {
    var collected: [HistoryEvent] = []
    func page(after: Int64) {
      store.history(account, after: after, limit: 64) { result in
        switch result {
        case .failure(let error):
          completion(.failure(.unavailable(method: "history", retryAfter: 1, error.message)))
        case .success(let chunks):
          for chunk in chunks {
            guard let events = HistoryBatch.decode(chunk.bytes, first: chunk.cursor) else {
              completion(
                .failure(
                  ResponseError(
                    code: .internalError, message: "account \(account): a stored history chunk is unreadable")))
              return
            }
            for event in events where event.cursor > cursor && wanted(event) {
              collected.append(event)
              if let limit, collected.count >= limit {
                completion(.success(collected))
                return
              }
            }
          }
          guard chunks.count == 64, let last = chunks.last else {
            completion(.success(collected))
            return
          }
          page(after: last.cursor + Int64(last.count) - 1)
        }
      }
    }
    page(after: cursor)
  }

  /// Seed 000's metrics across every account (the admin's `metrics/get` without an account): each account's stored
  /// history, read a page at a time in account order, computed on its own and pooled (``FleetMetrics``). The tips
  /// are the catalog's.
  func fleetMetrics(_ request: MetricsGetRequest, completion: @escaping (Result<MetricsReport, ResponseError>) -> Void)
  {
    let engine: Engine
    let tips: [MetricsTip]
    do {
      engine = try makeEngine(account: "fleet")  // only its tips and its clock are read
      tips = try Handlers.metricsTips(request, engine: engine)
    } catch let error as ResponseError {
      return completion(.failure(error))
    } catch {
      return completion(.failure(ResponseError(code: .internalError, message: "metrics/get: \(error)")))
    }
    var fleet = FleetMetrics(
      tips: tips, configuration: services.configuration.metrics, since: request.since, until: request.until,
      now: engine.clock.now())
    var current: (account: String, start: Double, events: [HistoryEvent])?
    func flush() {
      if let current { fleet.add(history: current.events, historyStart: current.start) }
      current = nil
    }
    let pageSize = 256
    func page(after account: String, cursor: Int64) {
      store.historyByAccount(after: account, cursor: cursor, limit: pageSize) { result in
        switch result {
        case .failure(let error):
          completion(.failure(.unavailable(method: MetricsGetRequest.method, retryAfter: 1, error.message)))
        case .success(let chunks):
          for chunk in chunks {
            guard let events = HistoryBatch.decode(chunk.bytes, first: chunk.cursor) else {
              let message = "account \(chunk.account): a stored history chunk is unreadable"
              return completion(.failure(ResponseError(code: .internalError, message: message)))
            }
            if current?.account != chunk.account {
              flush()
              current = (chunk.account, chunk.firstAt, [])
            }
            current!.events += events.filter { HistoryBatch.metricKinds & (1 << $0.kind.code) != 0 }
          }
          guard chunks.count == pageSize, let last = chunks.last else {
            flush()
            return completion(.success(fleet.report()))
          }
          page(after: last.account, cursor: last.cursor)
        }
      }
    }
    page(after: "", cursor: 0)
  }

  /// Replays the account's history after `cursor` to a new analytics subscriber, then makes it live: the account's
  /// requests wait meanwhile, so no entry is committed between the replay and going live.
  func replayAnalytics(
    of tenant: Tenant, to subscription: String, after cursor: Int64,
    done: @escaping (Result<Void, ResponseError>) -> Void
  ) {
    guard let account = tenant.account else { return }
    residency.reading(account)
    history(of: account, after: cursor, limit: nil, wanted: { $0.kind.isStreamed }) { [weak self] result in
      guard let self else { return }
      if case .success(let events) = result {
        done(.success(()))
        tenant.subscriptions.replayed(subscription, events: events) { session, note in
          self.services.stage(.notification(note), on: session)
        }
      } else if case .failure(let error) = result {
        done(.failure(error))
      }
      self.perform(self.residency.committed(account, success: true))
      self.services.requestEndOfTurn()
    }
  }

  /// An account's export: its state as of its last stored operation and its whole history.
  func export(_ account: String, completion: @escaping (Result<AccountsExportRequest.Response, ResponseError>) -> Void)
  {
    store.load(account) { [weak self] result in
      guard let self else { return }
      switch result {
      case .failure(let error):
        completion(.failure(.unavailable(method: AccountsExportRequest.method, retryAfter: 1, error.message)))
      case .success(let stored):
        let snapshot: AccountSnapshot
        do {
          let engine = try self.makeEngine(account: account)
          snapshot = try AccountLoader.snapshot(
            account: account, engine: engine, snapshot: stored.snapshot, operations: stored.operations)
        } catch {
          completion(.failure(ResponseError(code: .internalError, message: "account \(account): \(error)")))
          return
        }
        self.history(of: account, after: 0, limit: nil, wanted: { _ in true }) { result in
          completion(
            result.map { events in
              AccountsExportRequest.Response(
                account: account, exportedAt: System.wallClockSeconds(), state: snapshot.json,
                history: events.filter { $0.kind.isStreamed }.map { AnalyticsEventInfo($0) },
                donations: events.filter { !$0.kind.isStreamed })
            })
        }
      }
    }
  }

  /// Makes `account` from an export (it must hold nothing yet); drops any copy of it this node holds.
  func importAccount(
    _ account: String, from export: JSONObject, completion: @escaping (Result<Int, ResponseError>) -> Void
  ) {
    let method = AccountsImportRequest.method
    let snapshot: AccountSnapshot
    var entries: [HistoryEvent] = []
    do throws(HostedError) {
      guard let state = export["state"] else { throw HostedError("params.export.state is missing") }
      snapshot = try AccountSnapshot(json: state)
      let reader = try? ResultReader(.object(export), path: "params.export")
      guard let reader else { throw HostedError("params.export must be an object") }
      do throws(ResultDecodingError) {
        entries += try reader.decodeArray("history", of: AnalyticsEventInfo.self).map { $0.event }
        if reader.optionalValue("donations") != nil {
          for (index, item) in try reader.array("donations").enumerated() {
            let donation = try ResultReader(item, path: "params.export.donations[\(index)]")
            entries.append(
              HistoryEvent(
                cursor: try donation.int64("cursor"), kind: .donation, at: try donation.double("at"),
                eventID: try donation.string("event")))
          }
        }
      } catch {
        throw HostedError(error.message)
      }
    } catch {
      completion(.failure(.invalidParams("\(method): \(error.message)")))
      return
    }
    // New cursors, in the export's order.
    entries.sort { $0.cursor < $1.cursor }
    var batch = HistoryBatch()
    for (index, entry) in entries.enumerated() {
      var entry = entry
      entry.cursor = Int64(index + 1)
      batch.append(entry)
    }
    let chunks = batch.encodedChunks.map {
      HostedStore.HistoryChunk(count: $0.count, firstAt: $0.oldestAt, lastAt: $0.newestAt, bytes: $0.bytes)
    }
    var imported = snapshot
    imported.cursor = 0
    store.importAccount(account, snapshot: imported, history: chunks) { [weak self] result in
      switch result {
      case .success:
        // A copy held here (an empty account someone signed in to) is read again on its next request.
        if let self, self.tenants[account] != nil, self.residency.isIdle(account) {
          self.residency.committing(account)
          self.perform(self.residency.committed(account, success: false))
        }
        completion(.success(entries.count))
      case .failure(let error):
        completion(
          .failure(
            error.message.contains("already holds")
              ? .invalidParams("\(method): params.account: \(error.message)")
              : .unavailable(method: method, retryAfter: 1, error.message)))
      }
    }
  }

  // MARK: - The fleet's analytics stream (the admin's, every account's events)

  /// An admin's `analytics/subscribe` without an account: every account's events in the fleet's order, replayed
  /// from `delivered` and then followed (at least once: after a reconnect, resume from the last cursor received).
  final class FleetSubscriber {
    let id: String
    unowned let session: Session
    var delivered: Int64
    var reading = false

    init(id: String, session: Session, delivered: Int64) {
      self.id = id
      self.session = session
      self.delivered = delivered
    }
  }

  private(set) var fleetSubscribers: [String: FleetSubscriber] = [:]
  private var fleetTimer: (any LoopTimer)?

  /// The fleet's events after `cursor` (positions in the fleet's order), at most `limit`.
  func fleetEvents(
    after cursor: Int64, limit: Int, completion: @escaping (Result<[AnalyticsEventInfo], ResponseError>) -> Void
  ) {
    store.fleetHistory(after: cursor, limit: max(1, limit / 4)) { result in
      switch result {
      case .failure(let error):
        completion(.failure(.unavailable(method: AnalyticsReadRequest.method, retryAfter: 1, error.message)))
      case .success(let chunks):
        var events: [AnalyticsEventInfo] = []
        for chunk in chunks {
          guard let decoded = HistoryBatch.decode(chunk.bytes, first: chunk.cursor) else { continue }
          for entry in decoded where entry.kind.isStreamed {
            var entry = entry
            entry.cursor = chunk.seq + (entry.cursor - chunk.cursor)
            guard entry.cursor > cursor else { continue }
            events.append(AnalyticsEventInfo(entry, account: chunk.account))
            if events.count == limit { return completion(.success(events)) }
          }
        }
        completion(.success(events))
      }
    }
  }

  func fleetHead(_ done: @escaping (Int64?) -> Void) { store.fleetHistoryHead { done(try? $0.get()) } }

  func subscribeFleet(session: Session, after: Int64?, head: Int64) -> String {
    let id = services.subscriptionIDs.next()
    // Answered after a PostgreSQL read: the session may have closed meanwhile (the subscriber holds it unowned).
    guard !session.isGone else { return id }
    fleetSubscribers[id] = FleetSubscriber(id: id, session: session, delivered: after ?? head)
    session.subscriptions.insert(id)
    armFleetPump()
    return id
  }

  func unsubscribeFleet(_ id: String, session: Session) -> Bool {
    guard let subscriber = fleetSubscribers[id], subscriber.session === session else { return false }
    fleetSubscribers[id] = nil
    session.subscriptions.remove(id)
    session.outbound.subscriptionEnded(id)
    return true
  }

  private func armFleetPump() {
    guard fleetTimer == nil else { return }
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    timer.start(afterMilliseconds: 200, repeatEvery: 200) { [unowned self] in self.pumpFleet() }
    fleetTimer = timer
  }

  /// Reads the next page for every fleet subscriber that has room (below its high-water mark).
  private func pumpFleet() {
    guard !fleetSubscribers.isEmpty else {
      fleetTimer?.close()
      fleetTimer = nil
      return
    }
    for subscriber in fleetSubscribers.values where !subscriber.reading {
      let session = subscriber.session
      guard !session.outbound.closing else { continue }
      let owed = session.outbound.stagedBytes + session.outbound.queuedBytes + session.stream.pendingWriteBytes
      guard owed < services.configuration.outgoingHighWater else { continue }
      subscriber.reading = true
      fleetEvents(after: subscriber.delivered, limit: 256) { [weak self, weak subscriber] result in
        guard let self, let subscriber, self.fleetSubscribers[subscriber.id] === subscriber else { return }
        subscriber.reading = false
        guard case .success(let events) = result else { return }
        for event in events {
          let note = AnalyticsEventNotification(subscription: subscriber.id, event: event)
          self.services.stage(.notification(StagedNotification(notification: note, shouldDisplay: nil)), on: session)
          subscriber.delivered = event.event.cursor
        }
        if !events.isEmpty { self.services.requestEndOfTurn() }
      }
    }
  }

  // MARK: - Reporting

  /// `sync/status` on a hosted node: PostgreSQL's connection (the writer's), this node's name as the device, and the
  /// commits in flight as the outbox.
  func syncStatus() -> SyncStatusRequest.Response {
    let state = store.isIncompatible ? "incompatible" : store.isWritable ? "connected" : "disconnected"
    return SyncStatusRequest.Response(
      enabled: true, state: state, server: store.serverDescription, account: nil,
      device: configuration.node, outbox: batches.count, outboxLimit: nil, lagSeconds: 0, cursor: 0, lastPushAt: nil,
      lastPullAt: nil, lastError: store.lastError)
  }

  var residentAccounts: Int { tenants.count }
  var commitsInFlight: Int { batches.count }
  func isResident(_ account: String) -> Bool { tenants[account] != nil }
}
