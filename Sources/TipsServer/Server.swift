#if canImport(Glibc)
  import Glibc
#endif
import TipsEngine
import TipsFraming
import TipsJSON
import TipsProtocol
import TipsStore
import TipsTransport

/// Why the daemon stopped, for the process exit status.
public enum ServerExit: Sendable, Equatable {
  /// stdin closed, a signal, or `exit` after `shutdown`.
  case clean
  /// `exit` without `shutdown` (LSP convention: status 1).
  case exitWithoutShutdown
}

/// `tipsd serve`: one engine and one datastore shared by every connection, driven by a libuv loop on one thread.
///
/// Each event-loop turn: read and dispatch requests (mutating the engine, staging replies and notifications),
/// then, after the turn's I/O, commit every staged durable write in one transaction and only then hand the staged
/// output to the transport. Time-driven changes come from a timer set to the engine's next change time.
public final class Server {
  let configuration: ServerConfiguration
  var logger: Logger
  let loop: EventLoop
  let engine: Engine
  let store: Datastore
  let virtualClock: VirtualClock?

  var sessions: [UInt64: Session] = [:]
  var observers: [String: ObserveSubscription] = [:]
  var actionSubscribers: [String: ActionSubscription] = [:]
  var nextSubscription = 0

  /// Durable writes of this turn, committed together.
  var pendingWrites: [StateWrite] = []
  /// Sessions with staged or queued output.
  var dirtySessions: Set<UInt64> = []

  var listener: UnixSocketServer?
  var stdioSession: Session?
  var timeTimer: LoopTimer?
  var housekeeping: LoopTimer?
  var signalWatchers: [SignalWatcher] = []
  var scheduledWakeup: Timestamp?
  var stopping = false
  var finished = false
  /// The locale of the client whose request is being handled (tip copy in results is chosen by it).
  var servingLocale: String?
  var exitStatus = ServerExit.clean

  /// Opens the datastore, loads it into a new engine and registers the catalog. Nothing listens yet.
  public init(configuration: ServerConfiguration, logger: Logger) throws(ServerError) {
    self.configuration = configuration
    self.logger = logger
    do {
      loop = try EventLoop()
    } catch {
      throw ServerError("cannot create the event loop: \(error)")
    }
    let clock: any EngineClock
    switch configuration.clock {
    case .system:
      clock = SystemClock()
      virtualClock = nil
    case .virtual(let start):
      let virtual = VirtualClock(now: start)
      clock = virtual
      virtualClock = virtual
    }
    engine = Engine(clock: clock)
    do {
      store = try Datastore(
        path: configuration.datastorePath,
        options: DatastoreOptions(fsync: configuration.fsync, recover: configuration.recoverDatastore))
    } catch {
      throw ServerError("\(error)")
    }
    if let moved = store.recoveredFrom {
      logger.warning("datastore was unreadable; moved it aside and started fresh", [("moved_to", moved)])
    }
    let started = loop.now
    do {
      engine.restore(try store.load())
    } catch {
      throw ServerError("\(error)")
    }
    logger.info(
      "datastore loaded",
      [
        ("path", store.path), ("schema", String(store.schemaVersion)),
        ("ms", String(loop.now - started)),
      ])
    if let catalogPath = configuration.catalogPath {
      let catalog = try Catalog.load(path: catalogPath)
      do {
        let mutation = try catalog.apply(to: engine)
        try store.apply(mutation.writes)
      } catch let error as EngineError {
        throw ServerError("catalog \(catalogPath): \(error)")
      } catch {
        throw ServerError("catalog \(catalogPath): \(error)")
      }
      logger.info("catalog registered", [("path", catalogPath), ("tips", String(catalog.tips.count))])
    }
  }

  // MARK: - Running

  /// Listens, runs the loop until the daemon stops, and closes everything.
  public func run() throws(ServerError) -> ServerExit {
    ProcessSignals.ignoreSIGPIPE()
    ProcessSignals.unblockTerminationSignals()
    switch configuration.listen {
    case .stdio:
      do {
        let connection = try StdioTransport.open(loop: loop)
        let session = attach(connection)
        stdioSession = session
      } catch {
        throw ServerError("cannot open stdio: \(error)")
      }
      logger.info("serving on stdio")
    case .socket(let path):
      do {
        let server = try UnixSocketServer(loop: loop, path: path)
        server.onConnection = { [unowned self] connection in self.accept(connection) }
        listener = server
      } catch {
        throw ServerError("\(error)")
      }
      logger.info("serving", [("socket", path)])
    }
    for signum in [SIGTERM, SIGINT] {
      do {
        let watcher = try loop.onSignal(signum) { [unowned self] in
          self.logger.info("signal received; draining", [("signal", signum == SIGTERM ? "SIGTERM" : "SIGINT")])
          self.beginStop()
        }
        signalWatchers.append(watcher)
      } catch {
        logger.warning("cannot watch signal \(signum): \(error)")
      }
    }
    let timer = loop.makeTimer()
    timeTimer = timer
    let tick = loop.makeTimer()
    housekeeping = tick
    scheduleHousekeeping()
    loop.afterEachTurn { [unowned self] in self.endOfTurn() }
    endOfTurn()
    loop.run()
    commit()
    store.close()
    loop.close()
    StdioTransport.finishPumps()
    return exitStatus
  }

  /// Stops accepting, commits, flushes what clients are owed (briefly), removes the socket, stops the loop.
  func beginStop() {
    guard !stopping else { return }
    stopping = true
    listener?.close()
    listener = nil
    endOfTurn()
    for session in sessions.values {
      session.closing = true
      session.connection.close(after: true)
    }
    // Give slow readers a moment to take what they are owed, then stop regardless.
    timeTimer?.stop()
    housekeeping?.start(afterMilliseconds: 2_000) { [unowned self] in self.finish() }
    if sessions.isEmpty { finish() }
  }

  func finish() {
    guard !finished else { return }
    finished = true
    timeTimer?.close()
    housekeeping?.close()
    for watcher in signalWatchers { watcher.close() }
    signalWatchers.removeAll()
    for session in sessions.values where !session.connection.isClosed {
      session.connection.close(after: false)
    }
    loop.stop()
  }

  func scheduleHousekeeping() {
    housekeeping?.start(afterMilliseconds: 1_000) { [unowned self] in
      self.checkPartialMessages()
      self.scheduleHousekeeping()
    }
  }

  // MARK: - Connections

  func accept(_ connection: Connection) {
    if stopping {
      connection.close(after: false)
      return
    }
    // Fail closed: a peer whose SO_PEERCRED cannot be read is refused too.
    let peerUID = connection.peerCredentials?.uid
    guard configuration.allowsPeer(uid: peerUID, ownUID: getuid()) else {
      logger.warning("refused a connection from another user", [("uid", peerUID.map { String($0) } ?? "unknown")])
      connection.close(after: false)
      return
    }
    if sessions.count >= configuration.maxConnections {
      logger.warning("connection limit reached; refusing a client", [("limit", String(configuration.maxConnections))])
      let error = ResponseError(
        code: .tooManyConnections,
        message: "too many connections: the daemon serves at most \(configuration.maxConnections) at once")
      connection.write(Framer.encode(OutgoingMessage.encodeError(id: nil, error: error), as: .newline))
      connection.close(after: true)
      return
    }
    _ = attach(connection)
  }

  func attach(_ connection: Connection) -> Session {
    let session = Session(connection: connection, maxMessageSize: configuration.maxMessageSize)
    sessions[session.id] = session
    connection.onData = { [unowned self, unowned session] bytes in self.received(bytes, on: session) }
    connection.onClose = { [unowned self, unowned session] reason in self.closed(session, reason: reason) }
    connection.startReading()
    logger.debug("client connected", [("connection", String(session.id))])
    return session
  }

  func closed(_ session: Session, reason: CloseReason) {
    logger.debug("client disconnected", [("connection", String(session.id)), ("reason", "\(reason)")])
    for id in session.subscriptions {
      observers[id] = nil
      actionSubscribers[id] = nil
    }
    session.subscriptions.removeAll()
    session.staged.removeAll()
    session.stagedBytes = 0
    session.clearQueue()
    sessions[session.id] = nil
    dirtySessions.remove(session.id)
    if session === stdioSession {
      // stdin closed (or `exit`): commit, then stop.
      stdioSession = nil
      beginStop()
    }
    if stopping && sessions.isEmpty { finish() }
  }

  func received(_ bytes: UnsafeRawBufferPointer, on session: Session) {
    guard !session.closing else { return }
    session.framer.feed(bytes)
    processBufferedInput(session)
  }

  /// Handles the complete messages the framer holds, one at a time, until the client's output backs up.
  ///
  /// Input back-pressure: while this client's output is backed up, its requests are not handled (the rest of the
  /// read waits in the framer, later ones in the kernel) rather than queueing their replies until the queue limit
  /// disconnects a client that does read, only more slowly than it pipelines. Checking after every message keeps a
  /// read full of requests with large replies from overshooting the bound. flush() resumes once the output has
  /// drained.
  func processBufferedInput(_ session: Session) {
    while !session.closing {
      if session.stagedBytes + session.queuedBytes + session.connection.pendingWriteBytes
        > configuration.outgoingHighWater
      {
        if !session.inputPaused {
          session.inputPaused = true
          session.connection.stopReading()
        }
        dirtySessions.insert(session.id)
        return
      }
      guard let event = session.framer.next() else { break }
      switch event {
      case .message(let message):
        handle(message, on: session)
      case .error(let error):
        protocolViolation(session, error)
        return
      }
    }
    if session.framer.hasPartialMessage {
      if session.partialSince == nil { session.partialSince = loop.now }
    } else {
      session.partialSince = nil
    }
  }

  /// A framing error: reply once with -32600 (id null), then close without reading further.
  func protocolViolation(_ session: Session, _ error: FramingError) {
    logger.info("closing a connection after a framing error", [("connection", String(session.id)), ("error", "\(error)")])
    let reply = OutgoingMessage.encodeError(id: nil, error: ResponseError(code: .invalidRequest, message: "\(error)"))
    stage(.raw(Framer.encode(reply, as: session.framing)), on: session)
    session.closing = true
    session.connection.stopReading()
  }

  func checkPartialMessages() {
    let limit = UInt64(configuration.partialMessageTimeout * 1000)
    let now = loop.now
    for session in sessions.values {
      guard let since = session.partialSince, now - since >= limit, !session.closing else { continue }
      logger.info("closing a connection whose message stayed incomplete", [("connection", String(session.id))])
      let error = ResponseError(
        code: .invalidRequest,
        message: "incomplete message: no complete frame within \(Int(configuration.partialMessageTimeout)) s")
      stage(.raw(Framer.encode(OutgoingMessage.encodeError(id: nil, error: error), as: session.framing)), on: session)
      session.closing = true
      session.connection.stopReading()
    }
    endOfTurn()
  }

  // MARK: - Output

  func stage(_ item: Session.Item, on session: Session) {
    session.staged.append(item)
    session.stagedBytes += session.estimatedSize(item)
    dirtySessions.insert(session.id)
  }

  /// Commits the turn's writes, then hands staged output to the transports and re-arms the time-driven timer.
  func endOfTurn() {
    var handledMore: Bool
    repeat {
      let committed = commit()
      var resumed: [Session] = []
      for id in dirtySessions {
        guard let session = sessions[id] else { continue }
        if flush(session, committed: committed) { resumed.append(session) }
      }
      dirtySessions = dirtySessions.filter { sessions[$0].map { $0.pendingCount > 0 || $0.inputPaused } ?? false }
      // Requests left in the framer of a client whose output drained are handled now (then committed and
      // answered by the next round), not when its next bytes happen to arrive.
      handledMore = false
      for session in resumed where !session.closing {
        processBufferedInput(session)
        if !session.staged.isEmpty { handledMore = true }
      }
    } while handledMore
    scheduleTimeDrivenWakeup()
  }

  /// Applies every pending durable write in one transaction. Returns false if the commit failed.
  @discardableResult
  func commit() -> Bool {
    guard !pendingWrites.isEmpty else { return true }
    let writes = pendingWrites
    pendingWrites.removeAll(keepingCapacity: true)
    do {
      try store.apply(writes)
      return true
    } catch {
      logger.error("datastore commit failed", [("error", "\(error)"), ("writes", String(writes.count))])
      return false
    }
  }

  /// Hands staged output to the transport; returns true when this resumed a client paused by back-pressure.
  @discardableResult
  func flush(_ session: Session, committed: Bool) -> Bool {
    if !session.staged.isEmpty {
      let staged = session.staged
      session.staged.removeAll(keepingCapacity: true)
      session.stagedBytes = 0
      for var item in staged {
        if case .reply(let reply) = item, !committed {
          var failed = reply
          failed.parts = zip(reply.parts, reply.failureParts).map { $1 ?? $0 }
          item = .reply(failed)
        }
        if session.pendingCount == 0 && session.connection.pendingWriteBytes < configuration.outgoingHighWater {
          deliver(item, on: session)
        } else {
          enqueue(item, on: session)
        }
      }
    }
    drain(session)
    if session.closing && session.pendingCount == 0 && !session.connection.isClosed {
      session.connection.close(after: true)
    }
    if session.inputPaused, session.pendingCount == 0,
      session.connection.pendingWriteBytes < configuration.outgoingHighWater
    {
      session.inputPaused = false
      if !session.closing { session.connection.startReading() }
      return true
    }
    return false
  }

  /// Queues an item behind back-pressure, coalescing `tips/shouldDisplayChanged` per subscription and tip.
  func enqueue(_ item: Session.Item, on session: Session) {
    if case .notification(let note) = item, case .shouldDisplay(let tipID, let value) = note.kind,
      let observer = observers[note.subscription]
    {
      let key = Session.CoalesceKey(subscription: note.subscription, tipID: tipID)
      if let index = session.coalesce[key] {
        // Coalesce: the queued notification for this tip takes the newest value; if that is what the client
        // already has, it is dropped altogether (never the same value twice in a row).
        let newValue = value["shouldDisplay"]?.boolValue
        if newValue == observer.lastDelivered[tipID] {
          session.queue[index] = .raw([])
          session.coalesce[key] = nil
        } else {
          session.queue[index] = item
        }
        return
      }
      session.coalesce[key] = session.queue.count
    }
    session.queue.append(item)
    session.queuedBytes += session.estimatedSize(item)
    if session.queuedBytes > configuration.outgoingQueueLimit {
      logger.warning(
        "disconnecting a client that is not reading its replies",
        [("connection", String(session.id)), ("queued_bytes", String(session.queuedBytes))])
      session.clearQueue()
      session.closing = true
      session.connection.close(after: false)
    }
  }

  func drain(_ session: Session) {
    while session.queueHead < session.queue.count,
      session.connection.pendingWriteBytes < configuration.outgoingHighWater
    {
      deliver(session.dequeue(), on: session)
    }
    session.compactQueue()
  }

  /// Encodes an item (assigning a notification its `seq`) and hands it to the transport.
  func deliver(_ item: Session.Item, on session: Session) {
    guard !session.connection.isClosed else { return }
    let payload: [UInt8]
    switch item {
    case .raw(let bytes):
      guard !bytes.isEmpty else { return }
      session.connection.write(bytes)
      return
    case .reply(let reply):
      payload = reply.isBatch ? OutgoingMessage.encodeBatch(reply.parts) : reply.parts[0]
    case .notification(let note):
      guard let encoded = encodeNotification(note) else { return }
      payload = encoded
    }
    session.connection.write(Framer.encode(payload, as: session.framing))
  }

  func encodeNotification(_ note: OutgoingNotification) -> [UInt8]? {
    var params: JSONObject = ["subscription": .string(note.subscription)]
    let method: String
    switch note.kind {
    case .shouldDisplay(let tipID, let value):
      guard let observer = observers[note.subscription] else { return nil }
      observer.seq += 1
      params["seq"] = .int(observer.seq)
      for (key, member) in value.objectValue ?? [:] { params[key] = member }
      observer.lastDelivered[tipID] = value["shouldDisplay"]?.boolValue
      method = Method.tipsShouldDisplayChanged
    case .groupCurrentTip(let group, let tipID):
      guard let observer = observers[note.subscription] else { return nil }
      observer.seq += 1
      params["seq"] = .int(observer.seq)
      params["group"] = .string(group)
      params["tipId"] = tipID.map(JSONValue.string) ?? .null
      method = Method.groupsCurrentTipChanged
    case .actionPerformed(let tipID, let actions):
      guard let subscriber = actionSubscribers[note.subscription] else { return nil }
      subscriber.seq += 1
      params["seq"] = .int(subscriber.seq)
      params["tipId"] = .string(tipID)
      params["actions"] = actions
      method = Method.tipsActionPerformed
    }
    return OutgoingMessage.encodeNotification(method: method, params: .object(params))
  }

  // MARK: - Changes → notifications

  /// Records a mutation's writes for this turn's commit and turns its changes into notifications.
  func apply(_ mutation: Mutation) {
    pendingWrites.append(contentsOf: mutation.writes)
    guard !mutation.changes.isEmpty, !observers.isEmpty else { return }
    for change in mutation.changes {
      switch change {
      case .tip(let state):
        // Built once per locale among the subscribers.
        var values: [String: JSONValue] = [:]
        for observer in observers.values where observer.watches(tip: state.id) {
          guard observer.lastAnnounced[state.id] != state.shouldDisplay else { continue }
          let locale = observer.session.locale
          let value = values[locale ?? ""] ?? notificationValue(state, locale: locale)
          values[locale ?? ""] = value
          observer.lastAnnounced[state.id] = state.shouldDisplay
          stage(
            .notification(OutgoingNotification(
              subscription: observer.id, kind: .shouldDisplay(tipID: state.id, value: value))),
            on: observer.session)
        }
      case .groupCurrentTip(let group, let tipID):
        for observer in observers.values where observer.groups.contains(group) {
          stage(
            .notification(OutgoingNotification(subscription: observer.id, kind: .groupCurrentTip(group: group, tipID: tipID))),
            on: observer.session)
        }
      }
    }
  }

  /// The params of `tips/shouldDisplayChanged` without `subscription` and `seq`.
  func notificationValue(_ state: TipState, locale: String?) -> JSONValue {
    let (name, reason) = Encoding.status(state.status)
    var object: JSONObject = ["id": .string(state.id), "shouldDisplay": .bool(state.shouldDisplay), "status": .string(name)]
    if let reason { object["reason"] = .string(reason) }
    object["tip"] = Encoding.content(engine.definition(of: state.id), id: state.id, locale: locale)
    return .object(object)
  }

  // MARK: - Time

  /// Arms the timer for the engine's next time-driven change (system clock only; a virtual clock moves only by
  /// request).
  func scheduleTimeDrivenWakeup() {
    guard virtualClock == nil, !stopping, let timer = timeTimer else { return }
    if let due = scheduledWakeup, due <= engine.clock.now() {
      // The instant has passed but another callback ran before the timer: catch up now, or the engine (which
      // only reports future instants) would make us cancel a change that is due.
      timer.stop()
      scheduledWakeup = nil
      timePassed()
      return
    }
    guard let next = engine.nextChangeTime() else {
      if scheduledWakeup != nil {
        logger.trace("time-driven wake-up cancelled")
        timer.stop()
        scheduledWakeup = nil
      }
      return
    }
    guard next != scheduledWakeup else { return }
    scheduledWakeup = next
    let delay = max(0, next - engine.clock.now())
    // Round up so the timer never fires just before the instant and finds nothing to do.
    let milliseconds = UInt64(min(delay * 1000, 86_400_000).rounded(.up)) + 1
    logger.trace("time-driven wake-up armed", [("at", String(next)), ("ms", String(milliseconds))])
    timer.start(afterMilliseconds: milliseconds) { [unowned self] in
      self.scheduledWakeup = nil
      self.timePassed()
    }
  }

  func timePassed() {
    logger.trace("time-driven wake-up")
    apply(engine.advanceTime())
    endOfTurn()
  }
}

/// A failure that stops `tipsd serve` from starting, with an actionable message.
public struct ServerError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
