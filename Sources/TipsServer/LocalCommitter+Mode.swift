import TipsCatalog
import TipsEngine
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsStore
import TipsTransport

/// The one-user daemon as a ``ServingMode``: one tenant, every request run as it is read, no budgets, the history in
/// the datastore.
extension LocalCommitter: ServingMode {
  var routesByAccount: Bool { false }
  var acknowledgesAfterCommit: Bool { false }

  func start() { services.local?.sync?.start(loop: server.loop) }
  func stop() { services.local?.sync?.stop() }
  func housekeep() { server.pruneHistoryIfDue() }

  func connected(_ session: Session, identity: Any?) {}
  func closed(_ session: Session) { services.local?.subscriptions.removeAll(of: session) }
  func chargeInput(_ bytes: Int, on session: Session) {}

  func initialize(_ request: InitializeRequest, _ context: RequestContext) throws(ResponseError) -> SignIn? {
    if let installID = request.installID, services.configuration.installID == nil {
      context.record(try context.engine { engine throws(EngineError) in try engine.setInstallID(installID) })
    }
    return nil
  }

  func admit(_ message: IncomingMessage, entry: HandlerTable.Entry?, on session: Session) -> Dispatcher.Target? {
    .none
  }
  func refusal(of method: String, traits: MethodTraits, on session: Session) -> ResponseError? { nil }
  func changeRefusal(_ tenant: Tenant, method: String, on session: Session) -> ResponseError? { nil }
  func idempotencyRefusal(_ tenant: Tenant, method: String) -> ResponseError? { nil }
  func donationRefusal(_ tenant: Tenant, info: JSONObject?, method: String, on session: Session) -> ResponseError? {
    nil
  }
  func operatorRefusal(_ context: RequestContext) -> ResponseError? { nil }
  func syncStatus() -> SyncStatusRequest.Response { services.local?.sync?.status() ?? .disabled }
  var uncommittedError: ResponseError { .datastoreFailure(path: services.store.path) }

  func historyBounds(of tenant: Tenant, _ done: @escaping (Result<HistoryBounds, ResponseError>) -> Void) {
    let store = services.store
    done(
      Result { () throws(ResponseError) in
        do { return try store.historyBounds() } catch { throw .datastoreFailure(path: store.path) }
      })
  }

  func readHistory(
    _ read: HistoryRead, of tenant: Tenant, _ done: @escaping (Result<[HistoryEvent], ResponseError>) -> Void
  ) {
    let store = services.store
    done(
      Result { () throws(ResponseError) in
        do {
          switch read {
          case .streamed(let after, let limit): return try store.history(after: after, limit: limit)
          case .metrics: return try store.historyForMetrics()
          }
        } catch {
          throw .datastoreFailure(path: store.path)
        }
      })
  }

  func replayAnalytics(
    of tenant: Tenant, to subscription: String, after cursor: Int64,
    done: @escaping (Result<Void, ResponseError>) -> Void
  ) {
    // Pumped after this turn's commit (``Services/pumpAnalytics()``).
    services.requestEndOfTurn()
    done(.success(()))
  }

  /// The `--token-file` (default `token`), made on first start.
  func listenerToken(_ web: WebConfiguration, logger: Logger) throws(ServerError) -> String {
    let tokenFile = web.tokenFile ?? "token"
    let (existing, created) = try TokenFile.ensure(tokenFile)
    // The token itself is never logged: only where it is.
    logger.info(created ? "created a token" : "using the token", [("token_file", tokenFile)])
    return existing
  }
  var upgradeAuthenticator: ((String, String?) -> Result<any Sendable, UpgradeRefusal>)? { nil }
  func reloadKeys() {}
  func health(_ body: inout JSONObject, catalogVersion: String?) {}

  var catalogFileRefusal: String? { nil }
  func catalogChanging(_ catalog: CatalogService, from old: Catalog, to next: Catalog) throws {}
  func catalogChanged(_ mutation: Mutation, version: String?, digest: String?, trigger: String) {
    guard let local = services.local else { return }
    services.record(mutation, in: local)
    local.history.refreshTrackedEvents(server.engine)
  }

  var residentTenants: [Tenant] { services.local.map { [$0] } ?? [] }

  func gauges(_ gauges: inout ServerCounters.Gauges) {
    gauges.datastoreBytes = try? services.store.sizeBytes()
  }
}
