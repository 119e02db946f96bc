import TipsProtocol

/// A reply to one message or batch, staged until the turn's commit decides whether it may acknowledge.
struct StagedReply {
  /// One response of a batch (the only one for a single message).
  struct Part {
    /// The request id (nil: `"id": null`).
    var id: RequestID?
    /// The encoded response.
    var bytes: [UInt8]
    /// Whether the request staged durable writes: its success may only be sent if the commit succeeds.
    var durable: Bool
  }

  var parts: [Part]
  var isBatch: Bool

  /// A lone error reply (bad JSON, a framing error, an empty batch).
  static func error(id: RequestID?, _ error: ResponseError) -> StagedReply {
    StagedReply(
      parts: [Part(id: id, bytes: OutgoingMessage.encodeError(id: id, error: error), durable: false)], isBatch: false)
  }

  var encoded: [UInt8] { isBatch ? OutgoingMessage.encodeBatch(parts.map(\.bytes)) : parts[0].bytes }
  var estimatedSize: Int { parts.reduce(16) { $0 + $1.bytes.count } }
}

/// A notification for one subscriber, complete except for `seq`, which is stamped when it is handed to the
/// transport.
struct StagedNotification {
  var notification: any ServerNotificationType
  /// For `tips/shouldDisplayChanged`: the tip and value, so a newer one for the same subscription and tip can
  /// replace it while it waits behind back-pressure.
  var shouldDisplay: (tipID: String, value: Bool)?
  /// Dropped when the turn's commit fails (`analytics/event`: what it announces was not stored).
  var requiresCommit = false

  init(
    notification: any ServerNotificationType, shouldDisplay: (tipID: String, value: Bool)?, requiresCommit: Bool = false
  ) {
    self.notification = notification
    self.shouldDisplay = shouldDisplay
    self.requiresCommit = requiresCommit
  }

  var subscription: String { notification.subscription }
  static let estimatedSize = 256
}

/// Output to one connection, as a state machine whose event methods return actions (the shape of swift-nio's
/// `…StateMachine` types): no I/O here, so it is tested on its own.
///
/// - **Staged** items wait for the turn's commit (group commit: nothing acknowledges a change that could still be
///   lost). ``commitFinished(success:failure:)`` releases them, replacing the success of a durable request by the
///   failure when the commit failed.
/// - **Released** items are handed to the transport while it holds less than `highWater` bytes; the rest wait in the
///   **queue**, where a newer `tips/shouldDisplayChanged` for the same subscription and tip replaces the waiting one
///   (or removes it, if its value is what the client last received: never the same value twice in a row).
/// - A queue over `queueLimit` bytes disconnects the client (memory stays bounded by the limit plus one reply).
/// - **Input back-pressure**: ``mustPauseInput(transportPending:)`` says when to stop reading this client; reading
///   resumes once everything owed is written.
/// - `seq` numbers what the client receives per subscription, from 1, with no gaps.
struct OutboundStateMachine {
  enum Action: Equatable {
    /// Hand these bytes (one message, unframed) to the transport.
    case write([UInt8])
    /// Hand these messages to the transport (``stageDirect(_:id:durable:)``'s buffer: each message followed by a
    /// newline, `ends` the offset after each newline) — on a newline-framed stream, the buffer as it is.
    case writeMessages([UInt8], ends: [Int])
    /// Stop reading the client's requests until it takes what it is owed.
    case pauseReading
    /// Read again.
    case resumeReading
    /// Everything owed is written and the connection is closing: close after flushing.
    case close
    /// The client did not read and its queue passed the limit: close at once (`queuedBytes` for the log).
    case disconnect(queuedBytes: Int)
  }

  struct CoalesceKey: Hashable {
    var subscription: String
    var tipID: String
  }

  enum Item {
    case reply(StagedReply)
    /// The reply to a single message (not a batch): as ``reply``, without the array of parts a batch needs (one
    /// allocation a request saved).
    case single(StagedReply.Part)
    case notification(StagedNotification)

    var estimatedSize: Int {
      switch self {
      case .reply(let reply): reply.estimatedSize
      case .single(let part): 16 + part.bytes.count
      case .notification: StagedNotification.estimatedSize
      }
    }
  }

  /// Transport bytes above which output waits in the queue (where notifications coalesce).
  let highWater: Int
  /// Queued bytes above which the client is disconnected.
  let queueLimit: Int

  private(set) var staged: [Item] = []
  private(set) var stagedBytes = 0
  /// Replies staged straight into one newline-framed buffer (``stageDirect(_:id:durable:)``) while nothing else is
  /// staged: a pipelining client's turn costs no array per reply. Only while `staged` is empty; anything else staged
  /// after them turns them into items first (``materializeDirect()``), so order is kept. A successful commit marks
  /// them released (when nothing else waited) and ``nextAction`` hands them over whole if the transport has room,
  /// else as items. Allocated only while there are some: an idle connection keeps none.
  private var direct: DirectReplies?

  private final class DirectReplies {
    // Touched for every reply: `@exclusivity(unchecked)` like the session's hot fields (loop thread only, never
    // passed inout across a call that touches them again).
    @exclusivity(unchecked) var buffer: [UInt8] = []
    /// Where each reply ends (after its newline), its id and whether it is durable: for a failed commit (the durable
    /// ones are replaced) and for the queue (each becomes an item again).
    @exclusivity(unchecked) var parts: [DirectPart] = []
    @exclusivity(unchecked) var released = false

    init() {
      buffer.reserveCapacity(1024)
      parts.reserveCapacity(16)
    }

    func append(_ message: [UInt8], id: RequestID?, durable: Bool) {
      buffer.append(contentsOf: message)
      buffer.append(0x0A)
      parts.append(DirectPart(id: id, end: buffer.count, durable: durable))
    }
  }

  private struct DirectPart {
    var id: RequestID?
    var end: Int
    var durable: Bool
  }
  private var released: [Item] = []
  private var releasedHead = 0
  /// What waits behind back-pressure; allocated only while something does (most connections never need it).
  private final class Backlog {
    /// nil marks a notification removed by coalescing.
    var queue: [Item?] = []
    var head = 0
    var bytes = 0
    /// Where the waiting `tips/shouldDisplayChanged` of a subscription and tip sits in ``queue``.
    var coalesce: [CoalesceKey: Int] = [:]
    var count: Int { queue.count - head }
  }

  private var backlog: Backlog?
  /// Bytes waiting behind back-pressure.
  var queuedBytes: Int { backlog?.bytes ?? 0 }
  /// Notifications coalesced away since last taken (for `/metrics`).
  private(set) var coalesced = 0

  /// The coalesced count since the last call.
  mutating func takeCoalesced() -> Int {
    defer { coalesced = 0 }
    return coalesced
  }
  /// The `shouldDisplay` the client last received per subscription and tip (in a notification or an observe result).
  private var lastDelivered: [CoalesceKey: Bool] = [:]
  private var seq: [String: Int64] = [:]
  /// The connection is closing: deliver what is owed, then close.
  private(set) var closing = false
  private var closeIssued = false
  private(set) var inputPaused = false

  init(highWater: Int, queueLimit: Int) {
    self.highWater = highWater
    self.queueLimit = queueLimit
  }

  // MARK: Events

  /// Stages an item for the turn's commit.
  mutating func stage(_ item: Item) {
    guard !closeIssued else { return }
    if let direct { if direct.released { releaseReadyDirectAsItems() } else { materializeDirect() } }
    staged.append(item)
    stagedBytes += item.estimatedSize
  }

  /// Stages the reply to a single request (`message`, unframed) for the turn's commit, on a newline-framed byte
  /// stream or one that delivers messages (WebSocket): appended to one buffer with the turn's other replies (as ``Item/single(_:)`` when something else is
  /// staged already). Counted like the item.
  mutating func stageDirect(_ message: [UInt8], id: RequestID?, durable: Bool) {
    guard !closeIssued else { return }
    stagedBytes += 16 + message.count
    if let replies = direct, !replies.released {
      // The usual case: the turn's buffer exists (nothing else is staged then).
      replies.append(message, id: id, durable: durable)
      return
    }
    if direct != nil { releaseReadyDirectAsItems() }
    guard staged.isEmpty else {
      staged.append(.single(StagedReply.Part(id: id, bytes: message, durable: durable)))
      return
    }
    let replies = DirectReplies()
    direct = replies
    replies.append(message, id: id, durable: durable)
  }

  /// The replies of a direct buffer as items (each without its newline).
  private static func items(_ buffer: [UInt8], _ parts: [DirectPart]) -> [Item] {
    var items: [Item] = []
    items.reserveCapacity(parts.count)
    var start = 0
    for part in parts {
      let bytes = Array(buffer[start..<part.end - 1])
      items.append(.single(StagedReply.Part(id: part.id, bytes: bytes, durable: part.durable)))
      start = part.end
    }
    return items
  }

  /// Turns the released direct replies into released items, ahead of any released after them.
  private mutating func releaseReadyDirectAsItems() {
    guard let replies = direct, replies.released else { return }
    released = Self.items(replies.buffer, replies.parts) + released[releasedHead...]
    releasedHead = 0
    direct = nil
  }

  /// Turns the direct replies into staged items, ahead of anything staged after them.
  private mutating func materializeDirect() {
    guard let replies = direct, !replies.released else { return }
    staged.insert(contentsOf: Self.items(replies.buffer, replies.parts), at: 0)
    direct = nil
  }

  /// The turn's commit finished: staged items are released for delivery. When it failed, each durable response is
  /// replaced by `failure(id)`.
  mutating func commitFinished(success: Bool, failure: (RequestID?) -> [UInt8]) {
    releaseReadyDirectAsItems()
    guard !staged.isEmpty || direct != nil else { return }
    if let replies = direct {
      if success && staged.isEmpty && releasedHead == released.count && queuedCount == 0 {
        // The usual case: the buffer is released whole.
        replies.released = true
        stagedBytes = 0
        return
      }
      materializeDirect()
    }
    if !success {
      staged.removeAll {
        if case .notification(let note) = $0 { return note.requiresCommit }
        return false
      }
      for index in staged.indices {
        if case .single(var part) = staged[index] {
          guard part.durable else { continue }
          part.bytes = failure(part.id)
          staged[index] = .single(part)
          continue
        }
        guard case .reply(var reply) = staged[index] else { continue }
        for part in reply.parts.indices where reply.parts[part].durable {
          reply.parts[part].bytes = failure(reply.parts[part].id)
        }
        staged[index] = .reply(reply)
      }
    }
    if releasedHead == released.count {
      // The usual case: hand the staged array over whole (an idle connection keeps no buffer afterwards).
      released = []
      releasedHead = 0
      swap(&released, &staged)
    } else {
      released += staged
      staged = []
    }
    stagedBytes = 0
  }

  /// The client sent `exit` on a socket, broke the framing, or the daemon is stopping: deliver what is owed, then
  /// ``Action/close``.
  mutating func beginClosing() { closing = true }

  /// The observe result gave the client this value: a later notification equal to it is not sent.
  mutating func given(subscription: String, tipID: String, shouldDisplay: Bool) {
    lastDelivered[CoalesceKey(subscription: subscription, tipID: tipID)] = shouldDisplay
  }

  /// A subscription ended: its notifications still owed are dropped.
  mutating func subscriptionEnded(_ id: String) {
    func keep(_ item: Item?) -> Bool {
      guard case .notification(let note)? = item else { return true }
      return note.subscription != id
    }
    staged.removeAll { !keep($0) }
    let directBytes = direct.map { $0.released ? 0 : $0.buffer.count + 15 * $0.parts.count } ?? 0
    stagedBytes = staged.reduce(directBytes) { $0 + $1.estimatedSize }
    released = released[releasedHead...].filter { keep($0) }
    releasedHead = 0
    if let backlog {
      for index in backlog.head..<backlog.queue.count where !keep(backlog.queue[index]) {
        backlog.bytes -= backlog.queue[index]?.estimatedSize ?? 0
        backlog.queue[index] = nil
      }
      backlog.coalesce = backlog.coalesce.filter { $0.key.subscription != id }
    }
    lastDelivered = lastDelivered.filter { $0.key.subscription != id }
    seq[id] = nil
  }

  // MARK: Decisions

  /// Whether the next request must wait: this client is owed more than `highWater` bytes. Returns
  /// ``Action/pauseReading`` the first time.
  mutating func mustPauseInput(transportPending: Int) -> (wait: Bool, action: Action?) {
    guard stagedBytes + queuedBytes + transportPending > highWater else { return (false, nil) }
    if inputPaused { return (true, nil) }
    inputPaused = true
    return (true, .pauseReading)
  }

  /// Whether a batch's replies (`bytes` so far) would pass the per-connection bound.
  func exceedsBound(adding bytes: Int) -> Bool {
    bytes + stagedBytes + queuedBytes > queueLimit
  }

  /// Anything left to do for this connection in a later turn.
  var hasWork: Bool {
    !staged.isEmpty || direct != nil || releasedHead < released.count || queuedCount > 0
      || inputPaused || (closing && !closeIssued)
  }

  private var queuedCount: Int { backlog?.count ?? 0 }

  /// The next thing to do, given the bytes the transport holds now; nil when there is nothing until the transport
  /// drains or a new turn stages more. Call again after performing each action.
  mutating func nextAction(transportPending: Int) -> Action? {
    guard !closeIssued else { return nil }
    if let replies = direct, replies.released {
      // Released while nothing else waited (``commitFinished``): whole if the transport takes it below the high
      // water, else reply by reply as items, each as the rules below decide.
      if queuedCount == 0 && releasedHead == released.count && transportPending + replies.buffer.count < highWater {
        direct = nil
        return .writeMessages(replies.buffer, ends: replies.parts.map(\.end))
      }
      releaseReadyDirectAsItems()
    }
    while releasedHead < released.count {
      let item = released[releasedHead]
      releasedHead += 1
      if queuedCount == 0 && transportPending < highWater {
        if let bytes = deliver(item) { return .write(bytes) }
        continue
      }
      if let action = enqueue(item) { return action }
    }
    if releasedHead > 0 {
      released = []
      releasedHead = 0
    }
    while queuedCount > 0 && transportPending < highWater {
      let item = dequeue()
      if let item, let bytes = deliver(item) { return .write(bytes) }
    }
    compactQueue()
    if closing && queuedCount == 0 && staged.isEmpty && direct == nil {
      closeIssued = true
      return .close
    }
    if inputPaused && queuedCount == 0 && transportPending < highWater {
      inputPaused = false
      return .resumeReading
    }
    return nil
  }

  // MARK: Queue

  /// Queues an item behind back-pressure, coalescing `tips/shouldDisplayChanged` per subscription and tip.
  private mutating func enqueue(_ item: Item) -> Action? {
    let backlog = self.backlog ?? Backlog()
    self.backlog = backlog
    if case .notification(let note) = item, let (tipID, value) = note.shouldDisplay {
      let key = CoalesceKey(subscription: note.subscription, tipID: tipID)
      if let index = backlog.coalesce[key] {
        coalesced += 1
        backlog.bytes -= backlog.queue[index]?.estimatedSize ?? 0
        if value == lastDelivered[key] {
          // The client already has this value: the waiting notification goes, and nothing replaces it.
          backlog.queue[index] = nil
          backlog.coalesce[key] = nil
        } else {
          backlog.queue[index] = item
          backlog.bytes += item.estimatedSize
        }
        return nil
      }
      backlog.coalesce[key] = backlog.queue.count
    }
    backlog.queue.append(item)
    backlog.bytes += item.estimatedSize
    guard backlog.bytes > queueLimit else { return nil }
    let owed = backlog.bytes
    self.backlog = nil
    closing = true
    closeIssued = true
    return .disconnect(queuedBytes: owed)
  }

  private mutating func dequeue() -> Item? {
    guard let backlog else { return nil }
    let item = backlog.queue[backlog.head]
    if case .notification(let note)? = item, let (tipID, _) = note.shouldDisplay {
      let key = CoalesceKey(subscription: note.subscription, tipID: tipID)
      if backlog.coalesce[key] == backlog.head { backlog.coalesce[key] = nil }
    }
    backlog.queue[backlog.head] = nil
    backlog.head += 1
    backlog.bytes -= item?.estimatedSize ?? 0
    return item
  }

  /// Drops the backlog once it is empty, or the consumed head of it once mostly consumed.
  private mutating func compactQueue() {
    guard let backlog else { return }
    if backlog.count == 0 {
      self.backlog = nil
    } else if backlog.head > 1024 && backlog.head * 2 > backlog.queue.count {
      backlog.queue.removeFirst(backlog.head)
      backlog.coalesce = backlog.coalesce.mapValues { $0 - backlog.head }
      backlog.head = 0
    }
  }

  /// Encodes an item for the transport, stamping a notification's `seq`.
  private mutating func deliver(_ item: Item) -> [UInt8]? {
    switch item {
    case .reply(let reply):
      return reply.encoded
    case .single(let part):
      return part.bytes
    case .notification(var note):
      let next = (seq[note.subscription] ?? 0) + 1
      seq[note.subscription] = next
      note.notification.seq = next
      if let (tipID, value) = note.shouldDisplay {
        lastDelivered[CoalesceKey(subscription: note.subscription, tipID: tipID)] = value
      }
      return note.notification.encoded()
    }
  }
}
