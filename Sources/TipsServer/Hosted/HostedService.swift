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
///   kept while it has sessions, and evicted least recently used past `--max-resident-accounts` (``HostedNode``).
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
  unowned let services: Services
  let loop: any EventLoop
  let logger: Logger
  let catalog: CatalogService
  /// The admin token (`--token-file`, re-read on SIGHUP), if the node has one.
  var adminToken: String?
  /// Who tokens sign in: the app's JWTs (``TokenVerifier``), or what the configuration hands in.
  var verifier: any Authenticator
  // The properties a donation's path reads and changes many times are `@exclusivity(unchecked)`, as the engine's
  // hottest are: the runtime's access checks were 7 % of a hosted donation's instructions (#47). Only the loop's
  // thread touches them, and no access to one stays open across a call that could reach it again.
  /// The apps of `--apps FILE` (#48), by id; the app `default` is the flags' (``verifier``, ``catalog``).
  @exclusivity(unchecked) var apps: [String: AppRuntime] = [:]
  /// The bounds on what signing in costs (a flood of forged tokens): see ``SignInGuard``.
  var signInGuard: SignInGuard
  /// Sessions not signed in yet, by id, and when they must be (`--sign-in-timeout`; the loop's seconds).
  var signInDeadlines = DeadlineQueue<UInt64>()
  @exclusivity(unchecked) var node: HostedNode
  @exclusivity(unchecked) var tenants: [String: Tenant] = [:]
  /// Accounts with changes or history entries to commit at the end of this turn.
  @exclusivity(unchecked) var touchedThisTurn: [Tenant] = []
  @exclusivity(unchecked) var limiter: RateLimiter
  /// `rpc.discover`'s ration per account (its reply is the whole OpenRPC document, a thousand times its request).
  var discoverLimiter = RateLimiter(rate: HostedService.discoverRate, burst: 3)
  /// Bytes an account's sessions send, in KiB (`--account-input-rate`).
  var inputLimiter: RateLimiter
  /// When each resident account's engine next changes with time.
  @exclusivity(unchecked) var timeQueue = DeadlineQueue<String>()
  /// When each signed-in user session's token stops being accepted, by session id.
  var expiries = DeadlineQueue<UInt64>()
  @exclusivity(unchecked) var sessionsByID: [UInt64: Session] = [:]
  var timeTimer: (any LoopTimer)?
  var timeTimerAt: Double?
  var housekeeping: (any LoopTimer)?
  /// Accounts an admin is deleting through this node: the sessions closed meanwhile (by PostgreSQL's notification).
  var deleting: [String: Int] = [:]
  /// Seconds until the housekeeping next deletes history older than `--history-days` (at the first tick PostgreSQL
  /// accepts changes, then hourly), and whether it is deleting.
  var untilHistoryPrune = 0
  var pruning = false
  let clock: any EngineClock
  var writable = false
  var everWritable = false

  /// A commit in flight: the accounts in it (each with what it carried), and the sessions whose output waits for it.
  struct Batch {
    /// In the order committed; an account once. Kept beside the account rather than in maps by account: the commit's
    /// answer walks them in order, with no lookup of its own (#47).
    var members: [Member] = []
    var sessions: [Session] = []

    struct Member {
      var account: String
      /// The seqs of the operations it pushed.
      var pushed: [Int64]
      /// History entries its chunks hold.
      var historyCount: Int
      /// Its history entries recorded this turn that the analytics stream carries once committed.
      var streamed: [HistoryEvent]?
      /// `sync/push` replies, answered once the commit is.
      var deviceReplies: [(Result<Int64, ResponseError>) -> Void] = []
      /// Each `sync/push`'s device id, in the order of ``deviceReplies``.
      var devices: [String] = []
      /// The requests that made its idempotent replies (answered with another node's first reply when it committed
      /// the key first).
      var keyed: [IdempotencyMemory.StagedRequest] = []
    }
  }
  @exclusivity(unchecked) var batches: [UInt64: Batch] = [:]
  @exclusivity(unchecked) var nextBatch: UInt64 = 0
  /// History entries recorded this turn that the analytics stream carries once committed, by account.
  @exclusivity(unchecked) var streamedThisTurn: [String: [HistoryEvent]] = [:]
  /// Sessions that pulled (`sync/pull`), told when their account moves (`sync/changed`): by session id, and the
  /// session ids of each account.
  var syncWatchers: [UInt64: SyncWatcher] = [:]
  @exclusivity(unchecked) var syncWatchersByAccount: [String: Set<UInt64>] = [:]

  // Hooks into the server.
  /// Hand the output of these sessions over: their commit succeeded (true) or failed — then each durable reply is
  /// an error, or, for a request whose idempotency key another node committed first, that first reply (by session,
  /// its requests' ids and results).
  var release: ([Session], Bool, FirstReplies) -> Void = { _, _, _ in }

  /// Per session, the requests answered with the reply another node committed first for their idempotency key.
  typealias FirstReplies = [ObjectIdentifier: [(id: RequestID?, result: [UInt8])]]
  /// Close a session after sending it this error (id null).
  var closeSession: (Session, ResponseError) -> Void = { _, _ in }
  /// Reload the catalog file (another node reloaded its catalog).
  var reloadCatalog: (String) -> Void = { _ in }
  /// Catalogs published through the admin API and the audit log (PostgreSQL only; #48).
  var catalogs: HostedCatalogs?
  /// The sessions signed in to an account and not already closing, from the server's sessions.
  var sessionsOfAccount: (String) -> [Session] = { _ in [] }

  /// Links (re)established since the last catch-up: the listener was not listening for a while (or never had), so
  /// what other nodes and devices committed meanwhile may never have been heard — every resident account pulls from
  /// its cursor once the reader is up.
  var catchUpDue = false
  /// The repair net's round over the resident accounts (`HostedService+Repair.swift`).
  var repair = RepairRound()
  /// Whether each link is up (`/healthz`, `tipsd_hosted_links`).
  var linkStates: [Link: Bool] = [:]
  var fleetSubscribers: [String: FleetSubscriber] = [:]
  var fleetTimer: (any LoopTimer)?
  /// The per-peer limiter and its clock: failed sign-ins are charged to the peer's connection rate, and a peer over
  /// its rate is refused (`tooManyAttempts`) without its token being verified. Set by the server.
  var signInLimiter: (limiter: ConnectionLimiter, now: () -> Double)?
  /// Delivers webhooks while this node holds the lease (PostgreSQL only; `HostedService+Webhooks.swift`).
  var webhooks: WebhookDeliverer?

  init(
    configuration: HostedConfiguration, services: Services, loop: any EventLoop, logger: Logger,
    catalog: CatalogService, clock: any EngineClock
  ) throws(ServerError) {
    self.configuration = configuration
    self.services = services
    self.loop = loop
    self.logger = logger
    self.catalog = catalog
    if let file = configuration.adminTokenFile { adminToken = try TokenFile.ensure(file, admin: true).token }
    if let file = configuration.jwtSecretFile { try TokenFile.checkPrivate(file, what: "the JWT secret file") }
    signInGuard = SignInGuard(SignInGuard.Configuration(failureRate: configuration.signInFailureRate))
    self.clock = clock
    do {
      verifier =
        try configuration.authenticator
        ?? TokenVerifier.load(
          secretFile: configuration.jwtSecretFile, jwksFile: configuration.jwksFile,
          audiences: configuration.audiences, issuer: configuration.issuer, leeway: configuration.leeway)
    } catch {
      throw ServerError("--hosted: \(error)")
    }
    if let file = configuration.appsFile {
      apps = try Self.loadApps(
        file, configuration: configuration, messagesDirectory: services.configuration.messagesDirectory)
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
      storeConfiguration.setBasedCommit = configuration.setBasedCommit
      storeConfiguration.commitPipeline = configuration.commitPipeline
      let postgres = HostedStore(loop: loop, configuration: storeConfiguration, logger: logger)
      store = postgres
      webhooks = WebhookDeliverer(
        store: postgres, loop: loop, logger: logger, node: configuration.node,
        retryFirst: configuration.webhookRetryFirst, leaseSeconds: configuration.webhookLease)
    }
    node = HostedNode(capacity: configuration.maxResidentAccounts)
    limiter = RateLimiter(rate: configuration.accountRate)
    inputLimiter = RateLimiter(rate: max(1, configuration.accountInputRate / 1024))
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
    webhooks?.start()
    let tick = loop.makeTimer()
    tick.keepsLoopAlive = false
    tick.start(afterMilliseconds: 1_000, repeatEvery: 1_000) { [unowned self] in self.everySecond() }
    housekeeping = tick
  }

  func stop() {
    catalogs?.stop()
    housekeeping?.close()
    timeTimer?.close()
    webhooks?.stop()
    store.stop()
  }

  /// Reads the JWT secret and JWKS files and the admin token again (SIGHUP); a broken file keeps what is in force.
  func reloadKeys() {
    reloadApps()
    do {
      guard configuration.authenticator == nil else { throw ServerError("the authenticator was handed in") }
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
