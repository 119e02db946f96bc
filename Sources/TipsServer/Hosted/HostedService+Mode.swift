import TipsCatalog
import TipsEngine
import TipsHosted
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsStore
import TipsTransport

/// Hosted mode as a ``ServingMode``: every message routed to its account (loaded, idle, within its budgets), replies
/// acknowledging a change held until PostgreSQL committed it, the history read from PostgreSQL.
extension HostedService: ServingMode {
  var routesByAccount: Bool { true }
  var acknowledgesAfterCommit: Bool { true }

  /// Hosted mode tidies up on its own timer (``start()``).
  func housekeep() {}

  func connected(_ session: Session, identity: Any?) {
    if let stream = session.stream as? WebSocketStream, let app = Self.app(ofPath: stream.path) { session.app = app }
    // Signed in by the WebSocket upgrade's token, or to sign in within --sign-in-timeout.
    if let principal = identity as? Principal { _ = signedIn(session, as: principal) }
    accepted(session)
  }

  /// The session signs in here, unless its connection's token already did; variants follow the account.
  func initialize(_ request: InitializeRequest, _ context: RequestContext) throws(ResponseError) -> SignIn? {
    let session = context.session
    if let app = request.app {
      guard serves(app) else {
        throw .invalidParams(
          "initialize: params.app: no app \"\(app)\" here (this deployment serves \(appIDs.joined(separator: ", ")))",
          data: ["path": "params.app"])
      }
      guard session.principal == nil || app == session.app else {
        throw .invalidParams(
          "initialize: params.app: the connection signed in to app \(session.app) (its WebSocket path or token); a "
            + "connection serves one app", data: ["path": "params.app"])
      }
      session.app = app
    }
    if let token = request.authToken {
      switch signInAttempt(token, on: session, refresh: false) {
      case .success(let principal): if let refusal = signedIn(session, as: principal) { throw refusal }
      case .failure(let error): throw error
      }
    }
    guard let principal = session.principal else {
      throw .unauthorized(
        reason: "missing",
        "initialize: sign in with params.auth.token (the app's JWT, or the admin token) or present the token on the "
          + "connection")
    }
    return signIn(of: principal)
  }

  func refusal(of method: String, traits: MethodTraits, on session: Session) -> ResponseError? {
    if traits.isChange, !store.isWritable {
      // Refused before the engine changes: a node never holds a change PostgreSQL did not take, and reads keep
      // being served from memory while it is away (failing over to a standby, say).
      return .unavailable(
        method: method, retryAfter: 1,
        "PostgreSQL is unavailable (\(store.lastError ?? "reconnecting")); changes are refused until it is back")
    }
    if method == DiscoverRequest.method, let refusal = admitDiscover(session) { return refusal }
    switch traits.hosted {
    case .testingOnly where !services.configuration.allowTesting:
      // A user choosing their own A/B variant would spoil the experiment for everyone reading it.
      return .testingDisabled(method: method)
    case .definitionsFromCatalog:
      return .forbidden(
        method: method,
        "in hosted mode the catalog defines tips, groups, parameters and events for every account (reload it with "
          + "catalog/reload or SIGHUP)")
    case .deviceOnly:
      return .forbidden(
        method: method,
        "a suppression is about one device's screen, and a hosted node serves every device of the account: "
          + "suppress in the app (skip drawing tips) instead")
    default:
      return nil
    }
  }

  func changeRefusal(_ tenant: Tenant, method: String, on session: Session) -> ResponseError? {
    changeBudget(tenant, method: method, session: session)
  }

  func idempotencyRefusal(_ tenant: Tenant, method: String) -> ResponseError? {
    idempotencyQuota(tenant, method: method)
  }

  func donationRefusal(_ tenant: Tenant, info: JSONObject?, method: String, on session: Session) -> ResponseError? {
    donationQuota(tenant, method: method) ?? infoBudget(info, method: method, charging: session)
  }

  /// Operators' methods are the admin token's: a reload re-reads the node's file and tells the fleet; the sync
  /// status names the PostgreSQL server.
  func operatorRefusal(_ context: RequestContext) -> ResponseError? {
    guard context.session.principal?.isAdmin == true else {
      return .forbidden(method: context.method, "only the admin token may call it")
    }
    return nil
  }

  /// PostgreSQL did not commit it (or the outcome is unknown: the connection broke); the account is read again before
  /// its next request, so a retry sees whether it was stored.
  var uncommittedError: ResponseError {
    .unavailable(method: "request", retryAfter: 1, "PostgreSQL did not confirm the commit")
  }

  /// The bounds in PostgreSQL; answered without them (never failed) when they cannot be read.
  func historyBounds(of tenant: Tenant, _ done: @escaping (Result<HistoryBounds, ResponseError>) -> Void) {
    bounds(of: tenant) { bounds in
      done(
        .success(
          HistoryBounds(
            oldestCursor: bounds?.oldestCursor, newestCursor: tenant.history.lastCursor, oldestAt: bounds?.oldestAt)))
    }
  }

  func readHistory(
    _ read: HistoryRead, of tenant: Tenant, _ done: @escaping (Result<[HistoryEvent], ResponseError>) -> Void
  ) {
    let account = tenant.account ?? ""
    switch read {
    case .streamed(let after, let limit):
      history(of: account, after: after, limit: limit, wanted: { $0.kind.isStreamed }, completion: done)
    case .metrics:
      let kinds = HistoryBatch.metricKinds
      history(of: account, after: 0, limit: nil, wanted: { kinds & (1 << $0.kind.code) != 0 }, completion: done)
    }
  }

  /// The admin token guards /metrics, and exists only when --token-file is given (read at start and again on
  /// SIGHUP). Without one, /metrics answers no one: its token is made here and never written anywhere.
  func listenerToken(_ web: WebConfiguration, logger: Logger) throws(ServerError) -> String {
    adminTokenForListener ?? TokenFile.generate()
  }

  /// The token verified with the keys of the app the path names (`/apps/<id>`; any other path: `default`).
  var upgradeAuthenticator: ((String, String?) -> Result<any Sendable, UpgradeRefusal>)? {
    { [unowned self] token, path in
      let app = Self.app(ofPath: path) ?? AccountKey.defaultApp
      guard self.serves(app) else { return .failure(UpgradeRefusal(status: 404, reason: "no app \(app) here")) }
      switch self.authenticate(token, app: app) {
      case .success(let principal): return .success(principal)
      case .failure(let error): return .failure(UpgradeRefusal(status: 401, reason: error.message))
      }
    }
  }

  func health(_ body: inout JSONObject, catalogVersion: String?) {
    // Still serving while PostgreSQL is away (reads and observations from memory; changes are refused with -32016),
    // but said: "connected" once every link is up — commits, reads, and the fleet's channel (without it other nodes'
    // changes are not heard until the catch-up that follows its return).
    let connected = Link.allCases.allSatisfy(isUp)
    var links: JSONObject = [:]
    for link in Link.allCases { links[link.rawValue] = .string(isUp(link) ? "up" : "down") }
    body["status"] = connected ? "ok" : "degraded"
    body["hosted"] = .object([
      "node": .string(configuration.node),
      "postgres": .string(connected ? "connected" : store.isIncompatible ? "incompatible" : "unavailable"),
      "links": .object(links),
      "residentAccounts": .int(Int64(residentAccounts)),
      "commitsInFlight": .int(Int64(commitsInFlight)),
      "oldestCommitSeconds": store.oldestCommitAge.map { .double(($0 * 1000).rounded() / 1000) } ?? .null,
      "catalog": .string(catalogVersion ?? ""),
    ])
  }

  var catalogFileRefusal: String? { catalogs?.fileReloadRefusal }

  func catalogChanging(_ catalog: CatalogService, from old: Catalog, to next: Catalog) throws {
    // The file of `--catalog` is the app default's: the other apps' accounts keep theirs.
    try moveCatalog(of: AccountKey.defaultApp, with: catalog, from: old, to: next)
  }

  func catalogChanged(_ mutation: Mutation, version: String?, digest: String?, trigger: String) {
    // Every node of the fleet reloads its catalog too (unless this reload came from another node's).
    if digest == nil, let version, trigger != "another node reloaded it" { store.notifyCatalog(version: version) }
  }

  var residentTenants: [Tenant] { Array(tenants.values) }

  func gauges(_ gauges: inout ServerCounters.Gauges) {
    gauges.hostedLinks = Link.allCases.map { ($0.rawValue, isUp($0)) }
    gauges.signInThrottled = signInCounts.throttled
    gauges.signInFailures = signInCounts.failures
    gauges.repairChecks = repairCounts.checks
    gauges.repairs = repairCounts.repairs
    gauges.webhookResults = webhooks?.results
    gauges.webhookLag = webhooks?.lag
  }

  // MARK: Which account a frame's message acts on

  /// Where a message runs, decided as it is dispatched; nil when its account is not idle (the session was parked on
  /// it). A message whose account could not be read while it waited is refused.
  func admit(_ message: IncomingMessage, entry: HandlerTable.Entry?, on session: Session) -> Dispatcher.Target? {
    let (refusal, chargedAlready) = session.takeReleased()
    if let refusal { return .refused(refusal) }
    let method: String
    let params: JSONValue?
    switch message {
    case .request(_, let name, let given), .notification(let name, let given):
      method = name
      params = given
    case .invalid, .response:
      return Dispatcher.Target.none
    }
    // Unknown methods, sessions not running and account-free methods: the gate and the handler decide.
    guard session.lifecycle == .running, let entry, entry.traits.scope != .accountFree else {
      return Dispatcher.Target.none
    }
    var named: String?
    if case .object(let object)? = params, let value = object["account"] {
      guard case .string(let text) = value else {
        return .refused(.invalidParams("\(method): params.account must be a string"))
      }
      named = text
    }
    // An admin's analytics and metrics without an account are the whole fleet's.
    if named == nil, session.principal?.isAdmin == true, entry.traits.scope == .fleetWide {
      return .fleet
    }
    switch account(for: session, named: named, method: method) {
    case .failure(let error):
      return .refused(error)
    case .success(let account):
      switch ready(account, for: session) {
      case .wait:
        return nil
      case .refused(let error):
        return .refused(error)
      case .ready(let tenant):
        if !chargedAlready, let refusal = admitRate(account, session: session) {
          return .refused(refusal)
        }
        // A change whose idempotency key this node does not know: PostgreSQL is asked first (#42).
        if entry.acceptsIdempotencyKey,
          mustLookUpKey(params, in: tenant, account: account, for: session)
        {
          return nil
        }
        return .tenant(tenant)
      }
    }
  }
}
