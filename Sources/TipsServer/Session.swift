import TipsFraming
import TipsJSON
import TipsProtocol
import TipsTransport

/// One connected client: its framer, lifecycle state and outgoing queue.
///
/// Output is staged during an event-loop turn and handed to the transport only after the turn's writes are
/// committed (group commit), so nothing acknowledges a change that could still be lost. While the transport has
/// more than `outgoingHighWater` bytes in flight, output waits in ``queue``; there, a newer
/// `tips/shouldDisplayChanged` for the same subscription and tip replaces the older one.
final class Session {
  enum Lifecycle { case uninitialized, running, shutDown }

  /// A reply to one JSON-RPC message or batch, encoded when it leaves.
  struct Reply {
    /// Each response of a batch (one for a single message).
    var parts: [[UInt8]]
    /// For a response that acknowledges a change: what to send instead if the commit fails.
    var failureParts: [[UInt8]?]
    var isBatch: Bool
  }

  enum Item {
    case reply(Reply)
    case notification(OutgoingNotification)
    /// Bytes already encoded (e.g. an error before closing).
    case raw([UInt8])
  }

  let connection: Connection
  let id: UInt64
  var framer: Framer
  var lifecycle = Lifecycle.uninitialized
  var clientName = "?"
  var locale: String?
  /// Staged this turn, waiting for the commit.
  var staged: [Item] = []
  /// Committed, waiting for the transport to drain.
  var queue: [Item] = []
  var queueHead = 0
  var queuedBytes = 0
  /// Where the queued `tips/shouldDisplayChanged` of a subscription and tip sits in ``queue``.
  var coalesce: [CoalesceKey: Int] = [:]

  struct CoalesceKey: Hashable {
    var subscription: String
    var tipID: String
  }
  var closing = false
  /// Estimated bytes of ``staged``.
  var stagedBytes = 0
  /// Reading from this client is paused until its output drains (input back-pressure).
  var inputPaused = false
  /// When the framer last started holding a partial message (loop milliseconds), for the partial-message timeout.
  var partialSince: UInt64?
  /// Subscriptions owned by this connection, dropped when it closes.
  var subscriptions: Set<String> = []

  init(connection: Connection, maxMessageSize: Int) {
    self.connection = connection
    self.id = connection.id
    self.framer = Framer(maxMessageSize: maxMessageSize)
  }

  var framing: Framing { framer.framing ?? .newline }

  var pendingCount: Int { queue.count - queueHead }

  /// Takes the oldest queued item.
  func dequeue() -> Item {
    let item = queue[queueHead]
    if case .notification(let note) = item, case .shouldDisplay(let tipID, _) = note.kind {
      let key = CoalesceKey(subscription: note.subscription, tipID: tipID)
      if coalesce[key] == queueHead { coalesce[key] = nil }
    }
    queueHead += 1
    queuedBytes -= estimatedSize(item)
    return item
  }

  /// Releases the consumed head of the queue once it is empty or mostly consumed.
  func compactQueue() {
    if queueHead == queue.count {
      clearQueue()
    } else if queueHead > 1024 && queueHead * 2 > queue.count {
      queue.removeFirst(queueHead)
      coalesce = coalesce.mapValues { $0 - queueHead }
      queueHead = 0
    }
  }

  func clearQueue() {
    queue.removeAll(keepingCapacity: false)
    queueHead = 0
    queuedBytes = 0
    coalesce.removeAll()
  }

  func estimatedSize(_ item: Item) -> Int {
    switch item {
    case .reply(let reply): reply.parts.reduce(16) { $0 + $1.count }
    case .notification: 256
    case .raw(let bytes): bytes.count
    }
  }
}

/// A server-to-client notification, encoded with its `seq` when it is handed to the transport.
struct OutgoingNotification {
  enum Kind {
    /// `tips/shouldDisplayChanged` for one tip; coalescable.
    case shouldDisplay(tipID: String, value: JSONValue)
    case groupCurrentTip(group: String, tipID: String?)
    case actionPerformed(tipID: String, actions: JSONValue)
  }
  var subscription: String
  var kind: Kind
}
