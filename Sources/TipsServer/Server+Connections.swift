import TipsCatalog
public import TipsEngine
import TipsFraming
import TipsHosted
public import TipsLogging
import TipsProtocol
import TipsStore
import TipsSystem
public import TipsTransport

// The server's connections: accepting and refusing them, reading their bytes into messages, closing them.

extension Server {
  // MARK: - Connections

  /// Serves a new connection. `primary`: the daemon stops when it closes (stdio). `transport` names how it is
  /// connected (`stdio`, `unix`, `websocket`). `peer` (e.g. `uid:1000`): who is connecting, for the per-peer limits;
  /// nil: not limited. `counted`: the peer was admitted and is released elsewhere (the TCP listener limits by address
  /// before the upgrade); the session keeps it only to charge failed sign-ins to it.
  public func accept(
    _ stream: any ByteStream, primary: Bool = false, transport: String = "unix", identity: (any Sendable)? = nil,
    peer: String? = nil, counted: Bool = false
  ) {
    if stopping {
      stream.close(after: false, reason: "daemon stopping")
      return
    }
    if sessions.count >= configuration.maxConnections {
      let limit = configuration.maxConnections
      refuse(
        stream, .tooManyConnections(limit: limit), "connection limit reached; refusing a client",
        [("limit", String(limit))])
      return
    }
    if let peer, !counted, let refusal = connectionLimiter.admit(peer, now: Double(loop.now) / 1000) {
      let error: ResponseError
      switch refusal {
      case .perPeer(let limit):
        error = .tooManyConnections(scope: refusal.scope, limit: Double(limit), retryAfter: nil, refusal.description)
      case .rate(let limit, let retryAfter):
        error = .tooManyConnections(scope: refusal.scope, limit: limit, retryAfter: retryAfter, refusal.description)
      }
      refuse(
        stream, error, "per-peer connection limit reached; refusing a client",
        [("peer", peer), ("limit", refusal.scope)])
      return
    }
    let session = Session(
      stream: stream, maxMessageSize: configuration.maxMessageSize, highWater: configuration.outgoingHighWater,
      queueLimit: configuration.outgoingQueueLimit, isPrimary: primary, transport: transport)
    session.peer = peer
    session.releasesPeer = !counted
    sessions[session.id] = session
    counters.connectionsAccepted[transport, default: 0] += 1
    services.mode.connected(session, identity: identity)
    stream.onData = { [unowned self, unowned session] bytes in self.received(bytes, on: session) }
    stream.onClose = { [unowned self, unowned session] reason in self.closed(session, reason: reason) }
    stream.startReading()
    logger.debug("client connected", [("connection", String(session.id)), ("transport", transport)])
  }

  /// Refuses a new connection: one -32010 error (id null), then close. Logged as a warning at most once per 10 s
  /// (a flood must not turn into a flood of log lines), saying how many refusals were left out meanwhile.
  func refuse(
    _ stream: any ByteStream, _ error: ResponseError, _ message: String, _ metadata: [(String, String)]
  ) {
    connectionRefused(limit: (error.data?["scope"]?.stringValue) ?? "daemon", message, metadata)
    let refusal = OutgoingMessage.encodeError(id: nil, error: error)
    stream.write(stream.deliversMessages ? refusal : Framer.encode(refusal, as: .newline))
    stream.close(after: true, reason: "connection limit")
  }

  /// Counts a refused connection (`limit`: `daemon`, `peer`, `rate`, or nil for one not counted, e.g. another
  /// user's) and logs it: a warning at most once per 10 s, saying how many were left out meanwhile (at debug level).
  public func connectionRefused(limit: String?, _ message: String, _ metadata: [(String, String)]) {
    if let limit { counters.connectionsRefused[limit, default: 0] += 1 }
    let (log, suppressed) = refusalLog.shouldLog(now: Double(loop.now) / 1000)
    if log {
      logger.warning(message, metadata + (suppressed > 0 ? [("refusals_not_logged", String(suppressed))] : []))
    } else {
      logger.debug(message, metadata)
    }
  }

  /// The number of connections served now.
  public var connectionCount: Int { sessions.count }

  /// `GET /metrics`: the server's counters in the Prometheus text format.
  public func prometheusText() -> String {
    var gauges = ServerCounters.Gauges(
      connections: connectionsByTransport, subscriptions: subscriptionCounts, datastoreBytes: nil,
      historyCursor: local?.history.lastCursor ?? 0,
      uptimeSeconds: Double(loop.now - startedAt) / 1000, version: TipsdVersion.server)
    services.mode.gauges(&gauges)
    return counters.render(gauges)
  }

  /// Open subscriptions by kind, over every tenant.
  var subscriptionCounts: [String: Int] {
    var counts: [String: Int] = [:]
    for tenant in services.mode.residentTenants {
      for (kind, count) in tenant.subscriptions.countsByKind { counts[kind, default: 0] += count }
    }
    return counts
  }

  /// Connections by transport (`unix`, `websocket`, `stdio`).
  public var connectionsByTransport: [String: Int] {
    var counts: [String: Int] = [:]
    for session in sessions.values { counts[session.transport, default: 0] += 1 }
    return counts
  }

  func closed(_ session: Session, reason: CloseReason) {
    session.isGone = true
    logger.debug("client disconnected", [("connection", String(session.id)), ("reason", "\(reason)")])
    if let peer = session.peer, session.releasesPeer { connectionLimiter.release(peer) }
    services.mode.closed(session)
    sessions[session.id] = nil
    services.turn.forget(session)
    if session.isPrimary { beginStop() }
    if stopping && sessions.isEmpty { finish() }
  }

  func received(_ bytes: UnsafeRawBufferPointer, on session: Session) {
    guard !session.outbound.closing else { return }
    services.mode.chargeInput(bytes.count, on: session)
    // A late time-driven wake-up is applied before the request it would have preceded.
    timeDriver?.catchUp()
    // A whole message (WebSocket) with nothing queued before it: handled in place, from the transport's buffer, with
    // the checks processBufferedInput makes before each message (it is copied only when it has to wait).
    if session.stream.deliversMessages && !session.hasQueuedInput && !session.isWaiting {
      let (wait, action) = session.outbound.mustPauseInput(transportPending: session.stream.pendingWriteBytes)
      if !wait {
        dispatcher.handle(raw: bytes, on: session)
        return
      }
      session.take(bytes)
      if action == .pauseReading { session.stream.stopReading() }
      services.markDirty(session)
      return
    }
    session.take(bytes)
    processBufferedInput(session)
  }

  /// Handles the complete messages the framer holds, one at a time, until the client's output backs up (input
  /// back-pressure: its requests wait — the rest of the read in the framer, later ones in the kernel — rather than
  /// their replies piling up). Checked after every message, so a read full of requests with large replies cannot
  /// overshoot the bound.
  func processBufferedInput(_ session: Session) {
    while !session.outbound.closing && !session.isWaiting {
      let (wait, action) = session.outbound.mustPauseInput(transportPending: session.stream.pendingWriteBytes)
      if wait {
        if action == .pauseReading { session.stream.stopReading() }
        services.markDirty(session)
        return
      }
      if let frame = session.frame, frame.hasMoreToDispatch {
        // The rest of a frame that waited for an account (hosted mode).
        guard dispatcher.continueFrame(frame, on: session) else { return }
        continue
      }
      if !session.stream.deliversMessages {
        // A byte stream: the message is handled in place, from the framer's buffer (no copy of its own).
        guard let event = session.framer.nextInPlace() else { break }
        switch event {
        case .range(let range):
          // A copy of the framer keeps its buffer alive (and unchanged) whatever the request does.
          let framer = session.framer
          guard framer.withBytes(of: range, { dispatcher.handle(raw: $0, on: session) }) else { return }
        case .event(.message(let message)):
          guard dispatcher.handle(message, on: session) else { return }
        case .event(.error(let error)):
          protocolViolation(session, error)
          return
        }
        continue
      }
      guard let event = session.nextInput() else { break }
      switch event {
      case .message(let message):
        // False: it waits for an account (hosted mode); the session was parked and resumes by itself.
        guard dispatcher.handle(message, on: session) else { return }
      case .error(let error):
        protocolViolation(session, error)
        return
      }
    }
    if session.hasPartialMessage {
      if session.partialSince == nil { session.partialSince = loop.now }
    } else if !session.stream.deliversMessages {
      session.partialSince = nil
    }
  }

  /// A framing error: reply once with -32600 (id null), then close without reading further.
  func protocolViolation(_ session: Session, _ error: FramingError) {
    logger.info(
      "closing a connection after a framing error", [("connection", String(session.id)), ("error", "\(error)")])
    services.stage(.reply(.error(id: nil, .framingError("\(error)"))), on: session)
    session.closeAfterOwed()
  }

  func checkPartialMessages() {
    let limit = UInt64(configuration.partialMessageTimeout * 1000)
    let now = loop.now
    for session in sessions.values {
      if session.stream.deliversMessages {
        // A WebSocket message arriving in fragments is held whole until its last: timed like a framed one, from
        // when it was first seen here (this check runs every second).
        let current = session.stream.partialMessage
        if current != session.partialMessage {
          session.partialMessage = current
          session.partialSince = current == nil ? nil : now
        }
      }
      guard let since = session.partialSince, now - since >= limit, !session.outbound.closing else { continue }
      logger.info("closing a connection whose message stayed incomplete", [("connection", String(session.id))])
      let seconds = Int(configuration.partialMessageTimeout)
      services.stage(
        .reply(.error(id: nil, .framingError("incomplete message: no complete frame within \(seconds) s"))), on: session
      )
      session.closeAfterOwed()
    }
  }
}
