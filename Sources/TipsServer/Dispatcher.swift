import TipsFraming
import TipsJSON
import TipsProtocol
import TipsStore
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
    /// The writer a reply is encoded into before it is copied into its connection's output (its storage reused).
    var scratch = JSONWriter(reservingCapacity: 256)
  }

  /// The handler (and counters slot) of `method`.
  private func entry(for method: String) -> HandlerTable.Entry? {
    if let entry = lastLookup.entry, lastLookup.method == method { return entry }
    guard let entry = table.entry(method) else { return nil }
    lastLookup.method = method
    lastLookup.entry = entry
    return entry
  }

  /// Where a message of a hosted session runs: in no account, in this tenant's, across the fleet (an admin's
  /// analytics and metrics that name no account), or nowhere (refused).
  enum Target {
    case none
    case tenant(Tenant)
    case fleet
    case refused(ResponseError)
  }

  /// Decodes one frame and stages its reply, if any. Returns false when the frame must wait (hosted mode: an account
  /// one of its messages acts on is loading, committing or catching up): the session was parked with the rest of the
  /// frame (``Session/frame``), which continues by itself once the account is idle.
  @discardableResult
  func handle(_ bytes: [UInt8], on session: Session) -> Bool {
    bytes.withUnsafeBytes { handle(raw: $0, on: session) }
  }

  /// ``handle(_:on:)`` for a message in a buffer the caller owns (only the decoded messages are kept if it waits).
  @discardableResult
  func handle(raw bytes: UnsafeRawBufferPointer, on session: Session) -> Bool {
    // A message of the plain shape is read straight from the bytes into its parts (``PlainRequest``): the usual
    // request goes on from them, with no message to build; anything else is parsed in full. The outcome is
    // ``IncomingPayload/decode(_:)``'s either way.
    if let plain = PlainRequest.scanParts(bytes) {
      if plain.hasID && !services.mode.routesByAccount {
        handleRequest(id: plain.id, method: plain.method, params: plain.params, on: session)
        return true
      }
      let message: IncomingMessage =
        plain.hasID
        ? .request(id: plain.id, method: plain.method, params: plain.params)
        : .notification(method: plain.method, params: plain.params)
      return continueFrame(PendingFrame(messages: [message], isBatch: false), on: session)
    }
    switch IncomingPayload.decodeParsingFully(bytes) {
    case .single(.request(let id, let method, let params)) where !services.mode.routesByAccount:
      handleRequest(id: id, method: method, params: params, on: session)
      return true
    case .single(let message):
      return continueFrame(PendingFrame(messages: [message], isBatch: false), on: session)
    case .batch(let messages):
      return continueFrame(PendingFrame(messages: messages, isBatch: true), on: session)
    case .emptyBatch:
      services.stage(.reply(.error(id: nil, .emptyBatch())), on: session)
      return true
    }
  }

  /// A single request of the local daemon: answered at once, its reply written straight into the connection's output
  /// (newline-framed bytes or WebSocket messages; else staged as it is: no closure, no array of parts).
  private func handleRequest(id: RequestID?, method: String, params: JSONValue?, on session: Session) {
    if session.stream.deliversMessages || session.framing == .newline, let entry = entry(for: method),
      entry.runAsync == nil
    {
      respondDirect(id: id, method: method, params: params, on: session)
    } else if let part = respondNow(id: id, method: method, params: params, on: session, target: nil) {
      services.stage(.single(part), on: session)
    } else {
      respond(to: .request(id: id, method: method, params: params), on: session) { part in
        services.stage(.single(part), on: session)
      }
    }
  }

  /// Dispatches the frame's messages from where it stopped, each admitted as it comes (hosted mode: its account
  /// decided now, after the messages before it ran — an `initialize` earlier in the batch signs the session in).
  /// Returns false when a message must wait for its account: the session is parked with the frame.
  func continueFrame(_ frame: PendingFrame, on session: Session) -> Bool {
    session.frame = frame
    while frame.hasMoreToDispatch {
      var target: Target?
      let mode = services.mode
      if mode.routesByAccount {
        let message = frame.messages[frame.next]
        let handler = message.method.flatMap { self.entry(for: $0) }
        guard let admitted = mode.admit(message, entry: handler, on: session) else {
          // Replies that acknowledge changes wait for this turn's commit: the session must be in it.
          if frame.holdsDurableReply { services.markDirty(session) }
          return false
        }
        target = admitted
      }
      let (index, message) = frame.dispatchNext()
      respond(to: message, on: session, target: target) { part in
        frame.arrived(part, at: index)
        finish(frame, on: session)
      }
      // A batch whose replies alone exceed the per-connection bound (say, thousands of rpc.discover) would grow
      // the daemon's memory without limit: the client is disconnected, as one that stops reading is.
      if session.outbound.exceedsBound(adding: frame.replyBytes) {
        services.logger.warning(
          "disconnecting a client whose batch replies exceed the per-connection bound",
          [
            ("connection", String(session.id)), ("bytes", String(frame.replyBytes)),
            ("limit", String(services.configuration.outgoingQueueLimit)),
          ])
        session.frame = nil
        session.outbound.beginClosing()
        session.stream.close(after: false, reason: "batch replies over the bound")
        return true
      }
    }
    finish(frame, on: session)
    if !frame.isComplete && frame.holdsDurableReply { services.markDirty(session) }
    return true
  }

  /// Stages the frame's reply once every message was dispatched and every reply is in.
  private func finish(_ frame: PendingFrame, on session: Session) {
    guard frame.isComplete, session.frame === frame else { return }
    session.frame = nil
    if let reply = frame.reply { services.stage(reply, on: session) }
  }

  /// Answers one message through `reply` (at once, or later for a request answered asynchronously); notifications
  /// (no id) and stray responses get no reply.
  func respond(
    to message: IncomingMessage, on session: Session, target: Target? = nil,
    reply: @escaping (StagedReply.Part) -> Void
  ) {
    switch message {
    case .invalid(let id, let error):
      reply(StagedReply.Part(id: id, bytes: OutgoingMessage.encodeError(id: id, error: error), durable: false))
    case .response:
      return  // tipsd sends no requests; a stray response is ignored.
    case .notification(let method, let params):
      notify(method, params: params, on: session, target: target)
    case .request(let id, let method, let params):
      if let part = respondNow(id: id, method: method, params: params, on: session, target: target) {
        reply(part)
      } else if let entry = entry(for: method) {
        callAsync(method, entry, id: id, params: params, on: session, target: target, reply: reply)
      }
    }
  }

  /// Answers a request whose handler answers at once, its reply encoded into the scratch writer and appended to the
  /// connection's staged output (``OutboundStateMachine/stageDirect(_:id:durable:)``): no array of its own.
  private func respondDirect(id: RequestID?, method: String, params: JSONValue?, on session: Session) {
    let writesBefore = services.turn.writesStaged
    // Taken out while in use: a nested call would find an empty writer rather than this one.
    var writer = lastLookup.scratch
    lastLookup.scratch = JSONWriter(reservingCapacity: 0)
    writer.reset()
    var durable = false
    do {
      try call(method, id: id, params: params, on: session, into: &writer)
      // Durable when it staged writes: then its success may only leave after the turn's commit succeeds.
      durable = services.turn.writesStaged > writesBefore
    } catch {
      writer.reset()
      writer.writeRaw(OutgoingMessage.encodeError(id: id, error: error))
    }
    session.outbound.stageDirect(writer.bytes, id: id, durable: durable)
    services.markDirty(session)
    lastLookup.scratch = writer
  }

  /// Answers a request whose handler answers at once; nil for one that answers asynchronously (``callAsync``).
  private func respondNow(
    id: RequestID?, method: String, params: JSONValue?, on session: Session, target: Target?
  ) -> StagedReply.Part? {
    let writesBefore = services.turn.writesStaged
    if let entry = entry(for: method), entry.runAsync != nil { return nil }
    do {
      let bytes = try call(method, id: id, params: params, on: session, target: target)
      // Durable when it staged writes: then its success may only leave after the turn's commit succeeds.
      let durable = services.turn.writesStaged > writesBefore
      if durable && services.mode.acknowledgesAfterCommit { session.commitHold = .held }
      return StagedReply.Part(id: id, bytes: bytes, durable: durable)
    } catch {
      return StagedReply.Part(id: id, bytes: OutgoingMessage.encodeError(id: id, error: error), durable: false)
    }
  }

  /// Client notifications: `exit`, `initialized`, `$/cancelRequest`; any other method runs like a request whose
  /// reply is discarded (JSON-RPC 2.0 §4.1).
  func notify(_ method: String, params: JSONValue?, on session: Session, target: Target? = nil) {
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
        if let entry = entry(for: method), entry.runAsync != nil {
          callAsync(method, entry, id: nil, params: params, on: session, target: target) { _ in }
          return
        }
        _ = try call(method, id: nil, params: params, on: session, target: target)
      } catch {
        services.logger.debug("a notification failed", [("method", method), ("error", error.message)])
      }
    }
  }

  /// Runs one request through the lifecycle gate and its handler; returns the encoded reply. Counted in `/metrics`
  /// by method (its slot; `unknown` for any other name) and outcome, with its duration.
  func call(
    _ method: String, id: RequestID?, params: JSONValue?, on session: Session, target: Target? = nil
  ) throws(ResponseError) -> [UInt8] {
    var writer = JSONWriter()
    try call(method, id: id, params: params, on: session, target: target, into: &writer)
    return writer.bytes
  }

  /// ``call(_:id:params:on:target:)`` appending the reply to `writer` (nothing written when it throws).
  func call(
    _ method: String, id: RequestID?, params: JSONValue?, on session: Session, target: Target? = nil,
    into writer: inout JSONWriter
  ) throws(ResponseError) {
    let counters = services.counters
    let entry = entry(for: method)
    let slot = entry?.slot ?? counters.unknownSlot
    let started = System.monotonicSeconds()
    do throws(ResponseError) {
      let context = try gate(method, entry, params: params, on: session, target: target)
      guard entry!.acceptsIdempotencyKey else {
        if let error = entry!.run(id, context.params, context.context, &writer) { throw error }
        counters.requestAnswered(slot: slot, ok: true, seconds: System.monotonicSeconds() - started)
        return
      }
      try callIdempotent(entry!, id: id, params: context.params, context: context.context, into: &writer)
      counters.requestAnswered(slot: slot, ok: true, seconds: System.monotonicSeconds() - started)
    } catch {
      counters.requestAnswered(slot: slot, ok: false, seconds: System.monotonicSeconds() - started)
      throw error
    }
  }

  /// A change that may carry an `idempotencyKey`: a key its account answered before gets that reply again and
  /// changes nothing; a new key's reply is remembered (and stored with the turn's commit: the request is durable).
  private func callIdempotent(
    _ entry: HandlerTable.Entry, id: RequestID?, params: JSONValue?, context: RequestContext,
    into writer: inout JSONWriter
  ) throws(ResponseError) {
    var params = params
    guard let key = try IdempotencyMemory.take(from: &params, method: context.method), let tenant = context.tenant
    else {
      if let error = entry.run(id, params, context, &writer) { throw error }
      return
    }
    if let result = tenant.idempotency.result(for: key) {
      OutgoingMessage.writeResult(id: id, to: &writer) { $0.writeRaw(result) }
      return
    }
    tenant.idempotency.ran(key)
    if let refusal = services.mode.idempotencyRefusal(tenant, method: context.method) {
      throw refusal
    }
    let start = writer.bytes.count
    if let error = entry.run(id, params, context, &writer) { throw error }
    guard let result = IdempotencyMemory.result(ofReply: writer.bytes[start...]) else { return }
    tenant.idempotency.record(
      IdempotentReply(key: key, result: result, at: System.wallClockSeconds()),
      session: ObjectIdentifier(context.session),
      id: id)
    services.recordedIdempotentReply(in: tenant)
  }

  /// A request whose handler answers later (a read of PostgreSQL): the session reads no further input until the
  /// reply is staged, so replies keep their order.
  private func callAsync(
    _ method: String, _ entry: HandlerTable.Entry, id: RequestID?, params: JSONValue?, on session: Session,
    target: Target?, reply: @escaping (StagedReply.Part) -> Void
  ) {
    let counters = services.counters
    let started = System.monotonicSeconds()
    let context: (context: RequestContext, params: JSONValue?)
    do {
      context = try gate(method, entry, params: params, on: session, target: target)
    } catch {
      counters.requestAnswered(slot: entry.slot, ok: false, seconds: System.monotonicSeconds() - started)
      reply(StagedReply.Part(id: id, bytes: OutgoingMessage.encodeError(id: id, error: error), durable: false))
      return
    }
    session.beginAsync()
    let services = services
    entry.runAsync?(id, context.params, context.context) { result in
      counters.requestAnswered(
        slot: entry.slot, ok: (try? result.get()) != nil, seconds: System.monotonicSeconds() - started)
      let bytes: [UInt8]
      switch result {
      case .success(let encoded): bytes = encoded
      case .failure(let error): bytes = OutgoingMessage.encodeError(id: id, error: error)
      }
      let last = session.endAsync()
      reply(StagedReply.Part(id: id, bytes: bytes, durable: false))
      services.markDirty(session)
      if last { services.resumeInput(session) }
    }
  }

  /// The lifecycle gate, the tenant and the params the handler sees (an admin's `account` taken out).
  private func gate(
    _ method: String, _ entry: HandlerTable.Entry?, params: JSONValue?, on session: Session, target: Target?
  ) throws(ResponseError) -> (context: RequestContext, params: JSONValue?) {
    switch session.lifecycle {
    case .uninitialized where method != InitializeRequest.method && method != DiscoverRequest.method:
      throw .serverNotInitialized(method: method)
    case .shutDown:
      throw .shuttingDown()
    default:
      break
    }
    guard let entry else { throw .methodNotFound(method) }
    let mode = services.mode
    guard mode.routesByAccount else {
      return (RequestContext(session: session, services: services, tenant: services.local, method: method), params)
    }
    let traits = entry.traits
    if let refusal = mode.refusal(of: method, traits: traits, on: session) { throw refusal }
    var params = params
    if session.principal?.isAdmin == true, traits.scope != .accountFree, case .object(var object)? = params,
      object["account"] != nil
    {
      object["account"] = nil
      params = .object(object)
    }
    switch target ?? .none {
    case .none:
      // Only a method that acts on no account runs without one: anything else reaching here unadmitted (a bug) is
      // refused, never run with no tenant.
      guard traits.scope == .accountFree else {
        throw ResponseError(code: .internalError, message: "\(method): no account was decided for this request")
      }
      return (RequestContext(session: session, services: services, tenant: nil, method: method), params)
    case .tenant(let tenant):
      if traits.isChange, let refusal = mode.changeRefusal(tenant, method: method, on: session) {
        throw refusal
      }
      return (RequestContext(session: session, services: services, tenant: tenant, method: method), params)
    case .fleet:
      guard traits.scope == .fleetWide, session.principal?.isAdmin == true else {
        throw .forbidden(method: method, "only the admin token reads the whole fleet")
      }
      return (RequestContext(session: session, services: services, fleet: true, method: method), params)
    case .refused(let error):
      throw error
    }
  }
}
