import TipsFraming
import TipsJSON
import TipsProtocol
import TipsSystem

/// Turns one framed payload (a message or a batch) into handler calls and a staged reply: the lifecycle gate, the
/// handler lookup and the batch bound live here; the handlers in `Handlers/`.
struct Dispatcher {
  let table: HandlerTable
  let services: Services
  /// The last method looked up and its handler: a pipelined client sends the same method again and again, and
  /// comparing a short name costs less than hashing it.
  private let lastLookup = LastLookup()

  private final class LastLookup {
    var method = ""
    var entry: HandlerTable.Entry?
  }

  /// The handler (and counters slot) of `method`.
  private func entry(for method: String) -> HandlerTable.Entry? {
    if let entry = lastLookup.entry, lastLookup.method == method { return entry }
    guard let entry = table.entry(method) else { return nil }
    lastLookup.method = method
    lastLookup.entry = entry
    return entry
  }

  /// Decodes one frame and stages its reply, if any.
  func handle(_ bytes: [UInt8], on session: Session) {
    switch IncomingPayload.decode(bytes) {
    case .single(let message):
      if let part = respond(to: message, on: session) {
        services.stage(.reply(StagedReply(parts: [part], isBatch: false)), on: session)
      }
    case .batch(let messages):
      var parts: [StagedReply.Part] = []
      var bytes = 0
      for message in messages {
        guard let part = respond(to: message, on: session) else { continue }
        parts.append(part)
        bytes += part.bytes.count
        // A batch whose replies alone exceed the per-connection bound (say, thousands of rpc.discover) would grow
        // the daemon's memory without limit: the client is disconnected, as one that stops reading is.
        if session.outbound.exceedsBound(adding: bytes) {
          services.logger.warning(
            "disconnecting a client whose batch replies exceed the per-connection bound",
            [
              ("connection", String(session.id)), ("bytes", String(bytes)),
              ("limit", String(services.configuration.outgoingQueueLimit)),
            ])
          session.outbound.beginClosing()
          session.stream.close(after: false, reason: "batch replies over the bound")
          return
        }
      }
      // A batch of notifications only gets no reply at all (JSON-RPC 2.0 §6).
      if !parts.isEmpty { services.stage(.reply(StagedReply(parts: parts, isBatch: true)), on: session) }
    case .emptyBatch:
      services.stage(.reply(.error(id: nil, .emptyBatch())), on: session)
    }
  }

  /// Answers one message; notifications (no id) and stray responses return nil.
  func respond(to message: IncomingMessage, on session: Session) -> StagedReply.Part? {
    switch message {
    case .invalid(let id, let error):
      return StagedReply.Part(id: id, bytes: OutgoingMessage.encodeError(id: id, error: error), durable: false)
    case .response:
      return nil  // tipsd sends no requests; a stray response is ignored.
    case .notification(let method, let params):
      notify(method, params: params, on: session)
      return nil
    case .request(let id, let method, let params):
      let writesBefore = services.turn.writesStaged
      do {
        let bytes = try call(method, id: id, params: params, on: session)
        // Durable when it staged writes: then its success may only leave after the turn's commit succeeds.
        return StagedReply.Part(id: id, bytes: bytes, durable: services.turn.writesStaged > writesBefore)
      } catch {
        return StagedReply.Part(id: id, bytes: OutgoingMessage.encodeError(id: id, error: error), durable: false)
      }
    }
  }

  /// Client notifications: `exit`, `initialized`, `$/cancelRequest`; any other method runs like a request whose
  /// reply is discarded (JSON-RPC 2.0 §4.1).
  func notify(_ method: String, params: JSONValue?, on session: Session) {
    switch method {
    case ExitNotification.method:
      if session.isPrimary {
        services.stopDaemon(session.lifecycle == .shutDown ? .clean : .exitWithoutShutdown)
      } else {
        session.closeAfterOwed()
        services.markDirty(session)
      }
    case InitializedNotification.method, CancelRequestNotification.method:
      break
    default:
      do {
        _ = try call(method, id: nil, params: params, on: session)
      } catch {
        services.logger.debug("a notification failed", [("method", method), ("error", error.message)])
      }
    }
  }

  /// Runs one request through the lifecycle gate and its handler; returns the encoded reply. Counted in `/metrics`
  /// by method (its slot; `unknown` for any other name) and outcome, with its duration.
  func call(_ method: String, id: RequestID?, params: JSONValue?, on session: Session) throws(ResponseError) -> [UInt8] {
    let counters = services.counters
    let entry = entry(for: method)
    let slot = entry?.slot ?? counters.unknownSlot
    let started = System.monotonicSeconds()
    do {
      let bytes = try callUnmeasured(method, entry, id: id, params: params, on: session)
      counters.requestAnswered(slot: slot, ok: true, seconds: System.monotonicSeconds() - started)
      return bytes
    } catch {
      counters.requestAnswered(slot: slot, ok: false, seconds: System.monotonicSeconds() - started)
      throw error
    }
  }

  private func callUnmeasured(
    _ method: String, _ entry: HandlerTable.Entry?, id: RequestID?, params: JSONValue?, on session: Session
  ) throws(ResponseError) -> [UInt8] {
    switch session.lifecycle {
    case .uninitialized where method != InitializeRequest.method && method != DiscoverRequest.method:
      throw .serverNotInitialized(method: method)
    case .shutDown:
      throw .shuttingDown()
    default:
      break
    }
    guard let entry else { throw .methodNotFound(method) }
    return try entry.run(id, params, RequestContext(session: session, services: services, method: method)).get()
  }
}
