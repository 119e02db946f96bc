import TipsEngine
import TipsProtocol

/// One request's context: the connection it came on (its lifecycle, locale and subscriptions) and the services.
struct RequestContext {
  let session: Session
  let services: Services
  /// The method being handled, for error messages.
  let method: String

  var engine: Engine { services.engine }
  /// The client's locale: tip copy in results is chosen by it.
  var locale: String? { session.locale }

  func record(_ mutation: Mutation) { services.record(mutation) }

  /// Runs an engine call, mapping its error to the protocol's (naming this method).
  func engine<T>(_ body: (Engine) throws(EngineError) -> T) throws(ResponseError) -> T {
    do {
      return try body(services.engine)
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
