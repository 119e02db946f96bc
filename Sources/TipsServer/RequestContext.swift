import TipsEngine
import TipsJSON
import TipsProtocol

/// What every handler may use: the engine, the subscriptions, the turn and the daemon's settings — one object the
/// server builds once, instead of handlers reading server fields.
final class Services {
  let engine: Engine
  let subscriptions: SubscriptionRegistry
  let turn: Turn
  let configuration: ServerConfiguration
  let logger: Logger
  /// Set when the daemon runs with `--clock virtual`.
  let virtualClock: VirtualClock?
  /// Asks the loop to run the end of turn soon (work staged outside an I/O callback must not wait for one).
  let requestEndOfTurn: () -> Void
  /// `exit` over stdio: stop the daemon with this status.
  var stopDaemon: (ServerExit) -> Void = { _ in }
  /// Sync across devices (`--sync`), if configured.
  var sync: SyncService?

  init(
    engine: Engine, turn: Turn, configuration: ServerConfiguration, logger: Logger, virtualClock: VirtualClock?,
    requestEndOfTurn: @escaping () -> Void
  ) {
    self.engine = engine
    self.subscriptions = SubscriptionRegistry()
    self.turn = turn
    self.configuration = configuration
    self.logger = logger
    self.virtualClock = virtualClock
    self.requestEndOfTurn = requestEndOfTurn
  }

  /// Records an engine mutation: its writes for this turn's commit, its changes as notifications to subscribers; with
  /// sync, its synced writes become operations for the account's other devices.
  func record(_ mutation: Mutation) {
    recordMerged(mutation)
    if let sync, !mutation.writes.isEmpty { sync.recordedLocal(mutation) }
  }

  /// Records a mutation that merged other devices' state (or brought the engine to a merged value): persisted and
  /// notified like any other, never sent back out as operations.
  func recordMerged(_ mutation: Mutation) {
    turn.stage(mutation.writes)
    for (session, note) in subscriptions.notifications(for: mutation.changes, engine: engine) {
      stage(.notification(note), on: session)
    }
  }

  /// Stages output for a connection, to be handed over after this turn's commit.
  func stage(_ item: OutboundStateMachine.Item, on session: Session) {
    session.outbound.stage(item)
    markDirty(session)
  }

  func markDirty(_ session: Session) {
    turn.markDirty(session)
    requestEndOfTurn()
  }
}

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

/// The handler of every request type, by method name; built once (``Handlers/table``) and checked against
/// ``Messages/requests`` so that no method is left unanswered.
struct HandlerTable: Sendable {
  /// Decodes the params, runs the handler and encodes its result (the reply's bytes).
  typealias Run = @Sendable (RequestID?, JSONValue?, RequestContext) -> Result<[UInt8], ResponseError>

  private(set) var handlers: [String: Run] = [:]

  /// Registers the handler of `R`.
  mutating func on<R: RequestType>(
    _ type: R.Type, _ handler: @escaping @Sendable (R, RequestContext) throws(ResponseError) -> R.Response
  ) {
    precondition(handlers[R.method] == nil, "two handlers for \(R.method)")
    handlers[R.method] = { id, params, context in
      if R.isTestingOnly && !context.services.configuration.allowTesting {
        return .failure(.testingDisabled(method: R.method))
      }
      if let refusal = context.services.sync?.refusal(for: R.method) { return .failure(refusal) }
      do throws(ResponseError) {
        let request = try Messages.decode(R.self, params: params)
        let response = try handler(request, context)
        return .success(OutgoingMessage.encodeResult(id: id) { response.write(to: &$0) })
      } catch {
        return .failure(error)
      }
    }
  }

  subscript(method: String) -> Run? { handlers[method] }
}
