import TipsEngine
import TipsProtocol

/// One request's context: the connection it came on (its lifecycle, locale and subscriptions) and the services.
struct RequestContext {
  let session: Session
  let services: Services
  /// The account the request acts on: the daemon's one tenant, or in hosted mode the session's account (or the one
  /// an admin named). Nil only for hosted mode's methods that act on no account (``MethodTraits/Scope/accountFree``) and for
  /// an admin's fleet-wide reads (``fleet``): the dispatcher runs no other method without one.
  let tenant: Tenant!
  /// Hosted mode: an admin's analytics or metrics across every account (``MethodTraits/Scope/fleetWide``, no account named).
  let fleet: Bool
  /// The method being handled, for error messages.
  let method: String

  init(session: Session, services: Services, tenant: Tenant? = nil, fleet: Bool = false, method: String) {
    self.session = session
    self.services = services
    self.tenant = tenant
    self.fleet = fleet
    self.method = method
  }

  var engine: Engine { tenant.engine }
  /// The client's locale: tip copy in results is chosen by it.
  var locale: String? { session.locale }

  func record(_ mutation: Mutation, history: [HistoryEvent] = []) {
    services.record(mutation, in: tenant, history: history)
  }

  /// Runs an engine call, mapping its error to the protocol's (naming this method).
  func engine<T>(_ body: (Engine) throws(EngineError) -> T) throws(ResponseError) -> T {
    do {
      return try body(tenant.engine)
    } catch {
      throw ResponseError(error, method: method)
    }
  }

  /// A registered tip's state in this client's copy.
  func tipState(_ id: String) throws(ResponseError) -> TipStateInfo {
    guard let state = engine.state(of: id) else { throw .unknownTip(id) }
    return TipStateInfo(state, engine: engine, locale: locale)
  }
}
