import TipsFraming
import TipsProtocol
import TipsTransport

/// One connected client: its stream, framer, lifecycle and locale, and the state machine of its output.
final class Session {
  enum Lifecycle { case uninitialized, running, shutDown }

  let stream: any ByteStream
  let id: UInt64
  // `framer` and `outbound` are touched for every message; `@exclusivity(unchecked)` like the turn's hot fields: one
  // owner (the loop thread), never passed inout across a call that touches them again.
  @exclusivity(unchecked) var framer: Framer
  var lifecycle = Lifecycle.uninitialized
  /// The `initialize` locale: chooses the copy of localized tips sent to this client.
  var locale: String?
  @exclusivity(unchecked) var outbound: OutboundStateMachine
  /// When the framer last started holding a partial message (loop milliseconds), for the partial-message timeout.
  var partialSince: UInt64?
  /// The WebSocket message arriving in pieces when ``partialSince`` was set (``ByteStream/partialMessage``).
  var partialMessage: UInt64?
  /// Whether the turn lists this connection among those to flush at its end (``Turn/markDirty(_:)``).
  var isDirty = false
  /// Subscriptions owned by this connection, dropped when it closes.
  var subscriptions: Set<String> = []
  /// Subscriptions one connection may hold at once (a flood of `tips/observe` must not grow the daemon without end).
  static let maxSubscriptions = 1_000
  /// Subscriptions being made by requests that answer later (after a read of PostgreSQL): counted against
  /// ``maxSubscriptions`` from their check on, so a batch of them cannot overshoot it.
  var reservedSubscriptions = 0
  /// Whether the connection closed: an answer worked out asynchronously (a PostgreSQL read) may complete after it,
  /// and must then register nothing for it (the registries hold their sessions unowned).
  var isGone = false
  /// Whether the daemon stops when this connection closes (stdio).
  let isPrimary: Bool
  /// How the client is connected (`stdio`, `unix`, `websocket`), for logs and counts.
  let transport: String
  /// Who connected (`uid:N` on the Unix socket), counted by the server's per-peer limiter until the session closes.
  var peer: String?
  /// Whether the server releases `peer` from its limiter when the session closes (else the TCP listener does).
  var releasesPeer = false
  // MARK: Hosted mode

  /// Who the session is signed in as (hosted mode); nil until it signs in.
  var principal: Principal?
  /// The app it signs in to (hosted mode, #48): `initialize`'s `app`, or its WebSocket path's; `default` else.
  var app = "default"
  /// The frame (a message or a batch) being worked through: its next message waits for an account to be idle (hosted
  /// mode: loading, committing or catching up), or its replies wait for asynchronous answers. Input is not read
  /// further meanwhile.
  @exclusivity(unchecked) var frame: PendingFrame?
  /// Why its input is not read further now, if it is not (see ``Waiting``).
  @exclusivity(unchecked) var waiting = Waiting.no
  /// Whether its output waits for a hosted commit (see ``CommitHold``).
  @exclusivity(unchecked) var commitHold = CommitHold.none
  /// Accounts it holds subscriptions in (an admin may hold them in several).
  var subscribedAccounts: Set<String> = []
  /// Its sign-in attempts (hosted mode's per-connection limits).
  var signIn = SignInAttempts()
  /// Hosted mode: its input is not read until this timer fires (a request refused for `--account-rate`).
  var rateHold: (any LoopTimer)?

  /// Whether requests must wait before the next message is handled.
  var isWaiting: Bool { waiting.holdsInput || commitHold.isAwaiting }

  /// Whole messages from a stream that delivers them (WebSocket), waiting to be handled; the framer is unused then.
  @exclusivity(unchecked) private var messages: [[UInt8]] = []
  @exclusivity(unchecked) private var messagesHead = 0

  init(
    stream: any ByteStream, maxMessageSize: Int, highWater: Int, queueLimit: Int, isPrimary: Bool, transport: String
  ) {
    self.stream = stream
    self.id = stream.id
    self.framer = Framer(maxMessageSize: maxMessageSize)
    self.outbound = OutboundStateMachine(highWater: highWater, queueLimit: queueLimit)
    self.isPrimary = isPrimary
    self.transport = transport
  }

  var framing: Framing { framer.framing ?? .newline }

  /// Takes bytes from the stream: a whole message, or bytes for the framer.
  func take(_ bytes: UnsafeRawBufferPointer) {
    if stream.deliversMessages {
      messages.append(Array(bytes))
    } else {
      framer.feed(bytes)
    }
  }

  /// The next complete message (or framing error) received, if any.
  func nextInput() -> FramerEvent? {
    guard stream.deliversMessages else { return framer.next() }
    guard messagesHead < messages.count else { return nil }
    let message = messages[messagesHead]
    messages[messagesHead] = []
    messagesHead += 1
    if messagesHead == messages.count {
      messages = []
      messagesHead = 0
    }
    return .message(message)
  }

  /// Whether a message (or the rest of a frame) waits to be handled on a stream that delivers whole messages.
  var hasQueuedInput: Bool { frame?.hasMoreToDispatch == true || messagesHead < messages.count }

  /// Whether part of a message is waiting for the rest (the partial-message timeout).
  var hasPartialMessage: Bool { !stream.deliversMessages && framer.hasPartialMessage }

  /// Stops reading and closes once everything owed is written (a framing error, `exit` on a socket, stopping).
  func closeAfterOwed() {
    outbound.beginClosing()
    stream.stopReading()
  }
}

/// A hosted connection's sign-in attempts: failures (the connection is closed after a few) and its ration of
/// `auth/refresh` calls (a token bucket).
struct SignInAttempts {
  var failures = 0
  /// Tokens presented here whose signature did not verify: once there is one, the connection's next token is
  /// checked only within the node's budget of failed checks (``SignInGuard``).
  var badSignatures = 0
  private var refreshTokens: Double?
  private var refreshedAt: Double = 0

  /// Takes one refresh at `now` (monotonic seconds), `perMinute` a minute in bursts of as many; nil when allowed,
  /// else the seconds until one is.
  mutating func takeRefresh(now: Double, perMinute: Double) -> Double? {
    let rate = perMinute / 60
    var tokens = min(perMinute, (refreshTokens ?? perMinute) + max(0, now - refreshedAt) * rate)
    refreshedAt = now
    guard tokens >= 1 else {
      refreshTokens = tokens
      return (1 - tokens) / rate
    }
    tokens -= 1
    refreshTokens = tokens
    return nil
  }
}

/// Who a hosted session is signed in as.
enum Principal: Equatable {
  /// A user of the app: the token's `sub`; the session ends when the token stops being accepted (`exp` + leeway).
  /// `iat`, when the token has one: an erased account's tombstone refuses tokens issued before the erasure.
  case user(account: String, expiresAt: Double, acceptedUntil: Double, issuedAt: Double?)
  /// The admin token (`--token-file`): any account named in a call, and the admin methods.
  case admin

  var account: String? {
    if case .user(let account, _, _, _) = self { return account }
    return nil
  }

  var isAdmin: Bool { self == .admin }

  /// The token's `iat`, for a user whose token has one.
  var issuedAt: Double? {
    if case .user(_, _, _, let issuedAt) = self { return issuedAt }
    return nil
  }
}
