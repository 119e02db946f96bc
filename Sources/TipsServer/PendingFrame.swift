import TipsProtocol

/// One frame (a single message or a batch) worked through one message at a time, and its replies until every one is
/// in.
///
/// Each message is admitted when it is dispatched, not when the frame arrives: in a batch that signs in with
/// `initialize` and then calls an account's method, the second message's account is only known once the first has
/// run. A message whose account is not idle (hosted mode: loading, committing, catching up) stops the frame there;
/// the session is parked and the frame continues from that message once the account is idle
/// (``Dispatcher/continueFrame(_:on:)``). Replies answered later (a read of PostgreSQL) are counted, so a batch's
/// reply holds every request's response, whenever each came (JSON-RPC 2.0 §6).
///
/// A reply that acknowledges a change (`durable`) may only leave once the commit that stores it succeeded. A batch's
/// parts wait here until the batch is complete, possibly past that commit; the commit's outcome is applied to them
/// when it is known (``commitFinished(success:failure:)``, from the server's flush of the session).
///
/// Loop thread only.
final class PendingFrame {
  let messages: [IncomingMessage]
  let isBatch: Bool
  /// The next message to dispatch.
  private(set) var next = 0
  /// A batch's replies by message (nil: none yet, or none owed: a notification).
  private var parts: [StagedReply.Part?]
  /// Replies owed and not yet in.
  private var outstanding = 0
  /// Bytes of the batch's replies so far (bounded by the connection's queue limit).
  private(set) var replyBytes = 0

  init(messages: [IncomingMessage], isBatch: Bool) {
    self.messages = messages
    self.isBatch = isBatch
    parts = isBatch ? Array(repeating: nil, count: messages.count) : []
  }

  /// Whether messages remain to be dispatched (the frame waits for an account).
  var hasMoreToDispatch: Bool { next < messages.count }

  /// Whether every message was dispatched and every reply owed is in.
  var isComplete: Bool { next == messages.count && outstanding == 0 }

  /// Whether a reply collected so far acknowledges a change whose commit has not been decided yet.
  var holdsDurableReply: Bool { parts.contains { $0?.durable == true } }

  /// Takes the next message for dispatch; `owesReply`: it is a request (or invalid), so a reply will come.
  func dispatchNext() -> (index: Int, message: IncomingMessage) {
    let index = next
    next += 1
    if Self.owesReply(messages[index]) { outstanding += 1 }
    return (index, messages[index])
  }

  /// A reply came in for the message at `index`.
  func arrived(_ part: StagedReply.Part, at index: Int) {
    outstanding -= 1
    guard isBatch else {
      parts = [part]
      return
    }
    replyBytes += part.bytes.count
    parts[index] = part
  }

  /// The reply of a single message (nil for a notification); the batch's parts, in order.
  var reply: OutboundStateMachine.Item? {
    if isBatch {
      let collected = parts.compactMap { $0 }
      // A batch of notifications only gets no reply at all (JSON-RPC 2.0 §6).
      return collected.isEmpty ? nil : .reply(StagedReply(parts: collected, isBatch: true))
    }
    guard let part = parts.first ?? nil else { return nil }
    return .single(part)
  }

  /// The commit that the durable replies collected so far wait for finished: on success they may acknowledge, on
  /// failure each becomes `failure(id)`.
  func commitFinished(success: Bool, failure: (RequestID?) -> [UInt8]) {
    for index in parts.indices {
      guard var part = parts[index], part.durable else { continue }
      part.durable = false
      if !success { part.bytes = failure(part.id) }
      parts[index] = part
    }
  }

  /// Requests, and messages that could not be read as one (answered with an error), are owed a reply; notifications
  /// and stray responses are not.
  static func owesReply(_ message: IncomingMessage) -> Bool {
    switch message {
    case .request, .invalid: true
    case .notification, .response: false
    }
  }
}
