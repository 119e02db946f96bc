import TipsEngine
import TipsFraming
import TipsJSON
import TipsProtocol

/// The result of one request: its JSON result and whether it changed durable state (so its acknowledgement
/// depends on this turn's commit).
struct Handled {
  var result: JSONValue
  var mutates: Bool

  static func read(_ result: JSONValue) -> Handled { Handled(result: result, mutates: false) }
  static func wrote(_ result: JSONValue) -> Handled { Handled(result: result, mutates: true) }
}

extension Server {
  /// Client-to-server methods and notifications the daemon handles, byte-wise sorted (as `capabilities.methods`).
  static let answeredMethods: [String] = Method.all.filter { !Method.serverNotifications.contains($0) }

  /// Methods that also accept positional params, and the names of their positions.
  static let positionalParams: [String: [String]] = [Method.eventsDonate: ["id", "info"]]

  /// Decodes one frame (a message or a batch) and stages the reply, if any.
  func handle(_ bytes: [UInt8], on session: Session) {
    switch IncomingPayload.decode(bytes) {
    case .single(let message):
      if let part = respond(to: message, on: session) {
        stage(.reply(Session.Reply(parts: [part.0], failureParts: [part.1], isBatch: false)), on: session)
      }
    case .batch(let messages):
      var parts: [[UInt8]] = []
      var failures: [[UInt8]?] = []
      var bytes = 0
      for message in messages {
        if let part = respond(to: message, on: session) {
          parts.append(part.0)
          failures.append(part.1)
          bytes += part.0.count
          // A batch whose replies alone exceed the per-connection bound (say, thousands of rpc.discover) would
          // grow the daemon's memory without limit: the client is disconnected, as one that stops reading is.
          if bytes + session.stagedBytes + session.queuedBytes > configuration.outgoingQueueLimit {
            logger.warning(
              "disconnecting a client whose batch replies exceed the per-connection bound",
              [("connection", String(session.id)), ("bytes", String(bytes)), ("limit", String(configuration.outgoingQueueLimit))])
            session.closing = true
            session.connection.close(after: false)
            return
          }
        }
      }
      // A batch of notifications only gets no reply at all (JSON-RPC 2.0 §6).
      if !parts.isEmpty {
        stage(.reply(Session.Reply(parts: parts, failureParts: failures, isBatch: true)), on: session)
      }
    case .emptyBatch:
      let error = ResponseError(code: .invalidRequest, message: "invalid request: an empty batch")
      stage(.reply(Session.Reply(parts: [OutgoingMessage.encodeError(id: nil, error: error)], failureParts: [nil], isBatch: false)), on: session)
    }
  }

  /// Answers one message: the reply bytes, and for a change the reply to send instead if the commit fails.
  /// Notifications (no id) return nil.
  func respond(to message: IncomingMessage, on session: Session) -> ([UInt8], [UInt8]?)? {
    switch message {
    case .invalid(let id, let error):
      return (OutgoingMessage.encodeError(id: id, error: error), nil)
    case .response:
      return nil  // tipsd sends no requests; a stray response is ignored.
    case .notification(let method, let params):
      notify(method, params: params, on: session)
      return nil
    case .request(let id, let method, let params):
      do {
        let handled = try call(method, params: params, on: session)
        let reply = OutgoingMessage.encodeResult(id: id, result: handled.result)
        guard handled.mutates else { return (reply, nil) }
        let failure = ResponseError(
          code: .datastoreFailure,
          message: "datastore failure: the change was not committed to \(store.path); see the daemon's log")
        return (reply, OutgoingMessage.encodeError(id: id, error: failure))
      } catch {
        return (OutgoingMessage.encodeError(id: id, error: error), nil)
      }
    }
  }

  /// Client notifications: `exit`, `initialized`, `$/cancelRequest`; anything else is ignored (JSON-RPC forbids
  /// replying to a notification).
  func notify(_ method: String, params: JSONValue?, on session: Session) {
    switch method {
    case Method.exit:
      if session === stdioSession {
        exitStatus = session.lifecycle == .shutDown ? .clean : .exitWithoutShutdown
        beginStop()
      } else {
        session.closing = true
        session.connection.stopReading()
        dirtySessions.insert(session.id)
      }
    case Method.initialized, Method.cancelRequest:
      break
    default:
      // Any other method sent as a notification runs like a request whose reply is discarded (JSON-RPC 2.0 §4.1).
      do {
        _ = try call(method, params: params, on: session)
      } catch {
        logger.debug("a notification failed", [("method", method), ("error", error.message)])
      }
    }
  }

  /// Runs one request through the lifecycle gate and its handler.
  func call(_ method: String, params: JSONValue?, on session: Session) throws(ResponseError) -> Handled {
    switch session.lifecycle {
    case .uninitialized where method != Method.initialize && method != Method.rpcDiscover:
      throw ResponseError(
        code: .serverNotInitialized, message: "server not initialized: send \"initialize\" before \"\(method)\"")
    case .shutDown:
      throw ResponseError(code: .shuttingDown, message: "shutting down: only \"exit\" is accepted after \"shutdown\"")
    default:
      break
    }
    servingLocale = session.locale
    let p = try Params(params, method: method, positional: Server.positionalParams[method] ?? [])
    if method != Method.initialize, let allowed = OpenRPCDocument.paramNames[method] {
      // A misspelt param would otherwise be silently ignored (`tips/status {"id": …}` answering for every tip).
      // `initialize` stays open to members newer clients may send.
      for key in p.object.keys where !allowed.contains(key) {
        let expected = allowed.isEmpty ? "it takes no params" : "expected " + allowed.sorted().joined(separator: ", ")
        throw ResponseError(code: .invalidParams, message: "\(method): unknown param \"\(key)\" (\(expected))")
      }
    }
    switch method {
    case Method.initialize: return try initialize(p, session)
    case Method.shutdown:
      session.lifecycle = .shutDown
      return .read(.null)
    case Method.rpcDiscover: return .read(OpenRPCDocument.value)

    case Method.tipsConfigure: return try configure(p)
    case Method.tipsRegister: return try registerTips(p)
    case Method.tipsUnregister: return try unregisterTips(p)
    case Method.groupsRegister: return try registerGroup(p)
    case Method.groupsUnregister: return try unregisterGroup(p)
    case Method.parametersDefine: return try defineParameters(p)
    case Method.parametersSet: return try setParameter(p)
    case Method.eventsDonate: return try donate(p)
    case Method.eventsConfigure: return try configureEvent(p)
    case Method.tipsInvalidate: return try invalidate(p)
    case Method.tipsResetEligibility: return try resetEligibility(p)
    case Method.tipsDisplayed: return try displayed(p)
    case Method.tipsStatus: return try status(p)
    case Method.tipsExplain: return try explain(p)
    case Method.tipsObserve: return try observe(p, session)
    case Method.tipsUnobserve: return try unobserve(p, session)
    case Method.tipsPerformAction: return try performAction(p)
    case Method.actionsSubscribe: return try subscribeActions(p, session)
    case Method.actionsUnsubscribe: return try unsubscribeActions(p, session)

    case Method.testingShowAllTips: return override(.showAll)
    case Method.testingHideAllTips: return override(.hideAll)
    case Method.testingShowTips: return override(.show(try p.stringArray("ids")))
    case Method.testingHideTips: return override(.hide(try p.stringArray("ids")))
    case Method.testingClear: return override(.clear)
    case Method.datastoreReset:
      apply(engine.reset())
      return .wrote(.null)

    case Method.clockNow:
      return .read(.object(["now": .double(engine.clock.now()), "virtual": .bool(virtualClock != nil)]))
    case Method.clockAdvance: return try advanceClock(p)
    case Method.clockSet: return try setClock(p)
    default:
      throw ResponseError(code: .methodNotFound, message: "unknown method \"\(method)\"")
    }
  }
}
