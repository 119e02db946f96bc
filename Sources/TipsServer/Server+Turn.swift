import TipsCatalog
public import TipsEngine
import TipsFraming
import TipsHosted
public import TipsLogging
import TipsProtocol
import TipsStore
import TipsSystem
public import TipsTransport

// The end of a loop turn: the turn's writes committed by the mode's TurnCommitter (one-user: one datastore
// transaction; hosted: PostgreSQL's group commit), then every session's staged output released.

extension Server {
  // MARK: - End of turn

  func requestEndOfTurn() {
    guard !endOfTurnRequested else { return }
    endOfTurnRequested = true
    loop.requestEndOfTurn()
  }

  /// The one end-of-turn path: the mode's ``TurnCommitter`` commits the turn's writes once, then every connection's
  /// staged output that does not wait for an asynchronous commit is handed to its stream, connections whose output
  /// drained resume, and the committer re-arms what runs with time.
  func endOfTurn() {
    endOfTurnRequested = false
    let (committed, dirty, held) = services.committer.commitTurn()
    var resumed: [Session] = []
    for session in dirty where sessions[session.id] != nil && !held.contains(ObjectIdentifier(session)) {
      // Hosted: its output waits for an earlier commit still in flight.
      guard !session.commitHold.isAwaiting else { continue }
      if flush(session, committed: committed) { resumed.append(session) }
      if session.outbound.hasWork { services.turn.markDirty(session) }
    }
    // Requests left in the framer of a client whose output drained are handled now; their replies go out after the
    // next commit (processBufferedInput requests another end of turn when it stages anything).
    for session in resumed where sessions[session.id] != nil { processBufferedInput(session) }
    services.committer.afterTurn(committed: committed, stopping: stopping)
  }

  /// After a failed commit, the engine's durable state, the history recorder's memory (the newest cursor, each
  /// tip's last recorded eligibility) and, with `--sync`, the sync model (outbox, contributions) are read again from
  /// the datastore: nothing the lost turn did (donations,
  /// displays, parameters, history entries) counts afterwards, and the daemon goes on as if its requests — each
  /// answered -32005 — had never been made. What the datastore does not hold is kept (registrations, groups, testing
  /// overrides, transient parameters). Tips whose state this moves back are reported with the engine's next
  /// mutation (``endOfTurn()`` makes one at once).
  ///
  /// Reading back, rather than staging every change until the commit succeeds, keeps the request path as it is (the
  /// engine changes in place); it costs a load of the datastore, on failure only.
  func restoreFromDatastore() {
    do {
      let snapshot = try store.load()
      let history = try store.historyState()
      engine.restore(snapshot)
      local?.history.restore(history)
      try local?.sync?.restore(from: store)
      local?.idempotency.load(
        try store.idempotentReplies(since: System.wallClockSeconds() - configuration.idempotencyWindow))
    } catch {
      logger.error(
        "cannot read the datastore again after a failed commit; the daemon's state is ahead of it until a restart",
        [("error", "\(error)")])
    }
  }

  /// Performs a connection's output actions; returns true when it resumed reading.
  ///
  /// On a byte stream the turn's messages are framed into one buffer and handed over in one write (one syscall for
  /// a pipelined client's whole turn, not one per reply), written before any other action so order is kept. The
  /// buffer counts as held by the transport for the state machine's high-water decisions, and is handed over as
  /// soon as the two together would reach the high water: every decision is then the one the state machine would
  /// make had each message been written on its own (what the kernel takes of an earlier write only lowers what the
  /// transport holds).
  func flush(
    _ session: Session, committed: Bool, firstReplies: [(id: RequestID?, result: [UInt8])] = []
  ) -> Bool {
    func failure(_ id: RequestID?) -> [UInt8] {
      // Hosted: the request's idempotency key was committed first by another node: its reply is the answer.
      if let first = firstReplies.first(where: { $0.id == id }) {
        return OutgoingMessage.encodeResult(id: id) { $0.writeRaw(first.result) }
      }
      // Not committed (hosted: or the outcome is unknown — the account is read again before its next request, so a
      // retry sees whether it was stored).
      return OutgoingMessage.encodeError(id: id, error: services.mode.uncommittedError)
    }
    // A batch still collecting replies (waiting for an account or a read) keeps those acknowledging this commit.
    session.frame?.commitFinished(success: committed, failure: failure)
    session.outbound.commitFinished(success: committed, failure: failure)
    var resumed = false
    let stream = session.stream
    defer { counters.notificationsCoalesced += UInt64(session.outbound.takeCoalesced()) }
    let gathers = !stream.deliversMessages
    let framing = session.framing
    let highWater = session.outbound.highWater
    var gathered = outputBuffer
    outputBuffer = []
    func handOver() {
      guard !gathered.isEmpty else { return }
      stream.write(gathered)
      gathered.removeAll(keepingCapacity: true)
    }
    // What the transport holds: read again after each hand-over or other action, not for each message.
    var transportPending = stream.pendingWriteBytes
    while true {
      if !gathered.isEmpty && transportPending + gathered.count >= highWater {
        handOver()
        transportPending = stream.pendingWriteBytes
      }
      guard let action = session.outbound.nextAction(transportPending: transportPending + gathered.count) else { break }
      switch action {
      case .write(let payload) where gathers:
        Framer.append(payload, as: framing, to: &gathered)
        continue
      case .writeMessages(let bytes, _) where gathers && framing == .newline:
        gathered.append(contentsOf: bytes)
        continue
      case .writeMessages(let bytes, let ends) where gathers:
        var start = 0
        for end in ends {
          Framer.append(Array(bytes[start..<end - 1]), as: framing, to: &gathered)
          start = end
        }
        continue
      case .writeMessages(let bytes, let ends):
        stream.write(messages: bytes, ends: ends)
      case .write(let payload):
        stream.write(payload)
      case .pauseReading:
        handOver()
        stream.stopReading()
      case .resumeReading:
        handOver()
        stream.startReading()
        resumed = true
      case .close:
        handOver()
        stream.close(after: true, reason: stopping ? stream.daemonStoppingReason : "closed by server")
      case .disconnect(let owed):
        handOver()
        logger.warning(
          "disconnecting a client that is not reading its replies",
          [("connection", String(session.id)), ("queued_bytes", String(owed))])
        stream.close(after: false, reason: "not reading its replies")
      }
      transportPending = stream.pendingWriteBytes
    }
    handOver()
    // The buffer is kept for the next connection's flush, unless one turn made it large.
    if gathered.capacity <= Self.keptOutputCapacity { outputBuffer = gathered }
    return resumed
  }

  /// The largest gathering buffer kept between flushes.
  static let keptOutputCapacity = 512 << 10
}
