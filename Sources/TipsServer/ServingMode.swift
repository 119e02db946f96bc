import TipsCatalog
import TipsEngine
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsStore
import TipsTransport

/// What differs between a daemon serving one user's state and a hosted node serving many accounts (#44): the
/// connection, dispatch, request and metrics paths have one shape and ask their mode, rather than branching on it.
/// ``LocalCommitter`` is the one-user mode (every answer here a no-op or the datastore's), ``HostedService`` hosted
/// mode. The server picks one as it starts (``Services/mode``); nothing else checks which it is.
protocol ServingMode: TurnCommitter {
  /// Whether each message is routed to an account before it runs (``admit(_:on:table:)``); false when every request
  /// runs on the one tenant as it is read (the dispatcher's fast path).
  var routesByAccount: Bool { get }
  /// Whether a reply that acknowledges a change waits for the turn's commit to be answered (an asynchronous commit):
  /// the session's output is then held (``Session/CommitHold``).
  var acknowledgesAfterCommit: Bool { get }

  /// The server starts serving (timers, links) / stops.
  func start()
  func stop()
  /// Every second: what the mode keeps tidy (the one-user datastore's history prune).
  func housekeep()

  /// A connection was accepted, signed in already when the WebSocket upgrade's token was verified (`identity`).
  func connected(_ session: Session, identity: Any?)
  /// The connection is gone.
  func closed(_ session: Session)
  /// `bytes` of input read on the session (hosted mode charges them to its account's budget).
  func chargeInput(_ bytes: Int, on session: Session)

  /// Where a message of a frame runs; nil when it must wait (its session was parked). `entry` is its method's handler
  /// (nil: no such method). Only asked when ``routesByAccount``.
  func admit(_ message: IncomingMessage, entry: HandlerTable.Entry?, on session: Session) -> Dispatcher.Target?
  /// `initialize`'s part of the mode: hosted mode signs the session in (unless its connection's token did) and answers
  /// who it is; the one-user daemon takes the install id the client sends.
  func initialize(_ request: InitializeRequest, _ context: RequestContext) throws(ResponseError) -> SignIn?
  /// Refuses a method before it is routed (hosted mode: a change while PostgreSQL is away, `rpc.discover` unsigned).
  func refusal(of method: String, traits: MethodTraits, on session: Session) -> ResponseError?
  /// Refuses a change of `tenant` its budgets do not allow.
  func changeRefusal(_ tenant: Tenant, method: String, on session: Session) -> ResponseError?
  /// Refuses a change with a new idempotency key when the account holds its limit of them.
  func idempotencyRefusal(_ tenant: Tenant, method: String) -> ResponseError?
  /// Refuses a donation the account's budgets do not allow (donations kept, the size of its info).
  func donationRefusal(_ tenant: Tenant, info: JSONObject?, method: String, on session: Session) -> ResponseError?
  /// Refuses an operator's method (`catalog/reload`, `sync/status`) to a session that is not the operator's.
  func operatorRefusal(_ context: RequestContext) -> ResponseError?
  /// `sync/status`: the device's sync link, or a hosted node's PostgreSQL.
  func syncStatus() -> SyncStatusRequest.Response
  /// The error a change's request gets when the turn's commit failed.
  var uncommittedError: ResponseError { get }

  /// The history's bounds for a tenant (its oldest streamed entry, newest cursor, oldest instant).
  func historyBounds(of tenant: Tenant, _ done: @escaping (Result<HistoryBounds, ResponseError>) -> Void)
  /// A tenant's stored history.
  func readHistory(
    _ read: HistoryRead, of tenant: Tenant, _ done: @escaping (Result<[HistoryEvent], ResponseError>) -> Void)
  /// A new analytics subscription's replay after `cursor` (the one-user daemon pumps it at the end of the turn).
  func replayAnalytics(
    of tenant: Tenant, to subscription: String, after cursor: Int64,
    done: @escaping (Result<Void, ResponseError>) -> Void)

  /// The token that guards the HTTP listener's own routes (`/metrics`, the inspector).
  func listenerToken(_ web: WebConfiguration, logger: Logger) throws(ServerError) -> String
  /// Verifies the token a WebSocket upgrade presents (hosted mode); nil when upgrades carry no sign-in.
  var upgradeAuthenticator: ((String, String?) -> Result<any Sendable, UpgradeRefusal>)? { get }
  /// SIGHUP: the mode's own files read again (hosted mode: the JWT secret, JWKS and admin token files).
  func reloadKeys()
  /// `GET /healthz`: the mode's part of the body (hosted mode: PostgreSQL's links, the status degraded without them).
  func health(_ body: inout JSONObject, catalogVersion: String?)

  /// Why `catalog/reload` does not read the catalog file now, if it does not (hosted: a published version serves).
  var catalogFileRefusal: String? { get }
  /// The catalog moves from `old` to `next`: the mode's tenants other than the daemon's own engine follow it now
  /// (hosted mode: every resident account; accounts loaded later register the new one).
  func catalogChanging(_ catalog: CatalogService, from old: Catalog, to next: Catalog) throws
  /// The catalog changed on the daemon's engine by `mutation` (the one-user daemon records it in its tenant); a
  /// reload of the file (`version`, no published `digest`) not caused by another node tells the fleet (hosted).
  func catalogChanged(_ mutation: Mutation, version: String?, digest: String?, trigger: String)

  /// The tenants in memory (`/metrics`' subscription counts).
  var residentTenants: [Tenant] { get }
  /// Fills in the mode's own `/metrics` figures.
  func gauges(_ gauges: inout ServerCounters.Gauges)
}

/// Which stored history a handler reads.
enum HistoryRead {
  /// The streamed entries after a cursor, at most `limit` (`analytics/read`).
  case streamed(after: Int64, limit: Int)
  /// The entries metrics are computed from (`metrics/get`).
  case metrics
}
