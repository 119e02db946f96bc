import TipsFraming
import TipsProtocol
import TipsTransport

/// One connected client: its stream, framer, lifecycle and locale, and the state machine of its output.
final class Session {
  enum Lifecycle { case uninitialized, running, shutDown }

  let stream: any ByteStream
  let id: UInt64
  var framer: Framer
  var lifecycle = Lifecycle.uninitialized
  /// The `initialize` locale: chooses the copy of localized tips sent to this client.
  var locale: String?
  var outbound: OutboundStateMachine
  /// When the framer last started holding a partial message (loop milliseconds), for the partial-message timeout.
  var partialSince: UInt64?
  /// Subscriptions owned by this connection, dropped when it closes.
  var subscriptions: Set<String> = []
  /// Whether the daemon stops when this connection closes (stdio).
  let isPrimary: Bool

  init(stream: any ByteStream, maxMessageSize: Int, highWater: Int, queueLimit: Int, isPrimary: Bool) {
    self.stream = stream
    self.id = stream.id
    self.framer = Framer(maxMessageSize: maxMessageSize)
    self.outbound = OutboundStateMachine(highWater: highWater, queueLimit: queueLimit)
    self.isPrimary = isPrimary
  }

  var framing: Framing { framer.framing ?? .newline }

  /// Stops reading and closes once everything owed is written (a framing error, `exit` on a socket, stopping).
  func closeAfterOwed() {
    outbound.beginClosing()
    stream.stopReading()
  }
}
