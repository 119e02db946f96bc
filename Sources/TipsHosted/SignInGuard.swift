public import TipsTransport

/// What a hosted node spends on signing sessions in, bounded whatever arrives: a state machine with no I/O (the caller
/// verifies tokens and passes the time), so each rule is tested on its own.
///
/// A forged RS256 or ES256 token can only be refused by checking its signature — tens of microseconds to a hundred
/// on the node's one loop thread — and a genuine token can only be told from a forged one the same way. So failures
/// are charged to where they come from — the connection (and, by the caller, the peer) — and never to the account a
/// token names: a stranger forging tokens that name a victim's `sub` spends their own connections, not the victim's
/// sign-in. What the guard does:
///
/// - **Verified tokens are remembered** (the exact token, until it stops being accepted; at most
///   ``Configuration/cacheBytes`` of them, oldest forgotten first). A client reconnecting with its token, or an
///   attacker replaying a valid one, costs no cryptography. Forgotten on a key reload.
/// - **A node-wide budget of failed signature checks** (``Configuration/failureRate`` a second, bursts of twice as
///   many): each token whose signature does not verify spends one. While the budget is spent, a connection that
///   already failed a signature check is refused before its next is checked (``AuthError/Code/throttled``, with the
///   seconds until the budget allows one more). A connection that has failed none still has its token checked: a
///   genuine token always signs in, whatever a flood of forgeries from elsewhere spent, and the checks a flood costs
///   are then bounded by the connections it opens (one each; `--peer-connection-rate` and `--max-connections`),
///   while a connection is closed after its third failed sign-in.
///
/// Only tokens whose claims this node accepts (audience, issuer, expiry, subject) reach this guard at all: the
/// verifier refuses the rest before any cryptography.
public struct SignInGuard: Sendable {
  public struct Configuration: Sendable {
    /// Failed signature checks a second the node spends on (bursts of twice as many).
    public var failureRate: Double
    /// Bytes of verified tokens remembered.
    public var cacheBytes = 8 << 20

    public init(failureRate: Double) {
      precondition(failureRate > 0)
      self.failureRate = failureRate
    }
  }

  /// A token verified before and still accepted.
  public struct Remembered: Sendable, Equatable {
    public var subject: String
    public var expiresAt: Double
    public var acceptedUntil: Double
    /// `iat`, if the token has one (an erased account's tombstone refuses tokens issued before the erasure).
    public var issuedAt: Double?

    public init(subject: String, expiresAt: Double, acceptedUntil: Double, issuedAt: Double? = nil) {
      self.subject = subject
      self.expiresAt = expiresAt
      self.acceptedUntil = acceptedUntil
      self.issuedAt = issuedAt
    }
  }

  public let configuration: Configuration
  private var budget: RateLimiter
  private var verified: [String: Remembered] = [:]
  private var verifiedOrder: [String] = []
  private var verifiedHead = 0
  private var verifiedBytes = 0
  /// Tokens refused before any signature check, since start (`/metrics`).
  public private(set) var throttled = 0
  /// Signature checks that failed, since start.
  public private(set) var failures = 0

  private static let node = "node"

  public init(_ configuration: Configuration) {
    self.configuration = configuration
    budget = RateLimiter(rate: configuration.failureRate, burst: configuration.failureRate * 2)
  }

  /// The token, if it was verified before and is still accepted at `now` (no cryptography needed).
  public func remembered(_ token: String, now: Double) -> Remembered? {
    guard let entry = verified[token], now < entry.acceptedUntil else { return nil }
    return entry
  }

  /// Whether a token presented on a connection may have its signature checked now: nil when it may, else the
  /// seconds until it may. `connectionFailed`: the connection already presented a token whose signature did not
  /// verify. Whatever `sub` the token claims plays no part.
  public mutating func mayCheck(connectionFailed: Bool, now: Double) -> Double? {
    guard connectionFailed, let wait = budget.retryAfter(Self.node, now: now) else { return nil }
    throttled += 1
    return wait
  }

  /// The seconds until the node's budget allows one more failed check (0 when it does now).
  public func budgetWait(now: Double) -> Double { budget.retryAfter(Self.node, now: now) ?? 0 }

  /// A token failed its signature check: it spends the node's budget (the caller charges its connection and peer).
  public mutating func failed(now: Double) {
    failures += 1
    _ = budget.take(Self.node, now: now)
  }

  /// A token verified: remembered (within the cache's bytes).
  public mutating func succeeded(_ token: String, _ entry: Remembered, now: Double) {
    guard token.utf8.count <= configuration.cacheBytes / 16, verified[token] == nil else { return }
    verified[token] = entry
    verifiedOrder.append(token)
    verifiedBytes += token.utf8.count
    while verifiedBytes > configuration.cacheBytes, verifiedHead < verifiedOrder.count {
      let oldest = verifiedOrder[verifiedHead]
      verifiedHead += 1
      if verified.removeValue(forKey: oldest) != nil { verifiedBytes -= oldest.utf8.count }
    }
    compact(&verifiedOrder, head: &verifiedHead)
  }

  /// The keys changed (SIGHUP): no token is taken as verified any more.
  public mutating func keysReloaded() {
    verified = [:]
    verifiedOrder = []
    verifiedHead = 0
    verifiedBytes = 0
  }

  /// Forgets what no longer matters at `now`: budgets full again, tokens no longer accepted (bounded work a call).
  public mutating func tidy(now: Double) {
    budget.forgetFull(now: now)
    var checked = 0
    while verifiedHead < verifiedOrder.count, checked < 1_000 {
      let oldest = verifiedOrder[verifiedHead]
      guard let entry = verified[oldest] else {
        verifiedHead += 1
        continue
      }
      guard now >= entry.acceptedUntil else { break }
      verified[oldest] = nil
      verifiedBytes -= oldest.utf8.count
      verifiedHead += 1
      checked += 1
    }
    compact(&verifiedOrder, head: &verifiedHead)
  }

  /// Tokens remembered now.
  public var rememberedCount: Int { verified.count }

  private func compact(_ order: inout [String], head: inout Int) {
    guard head > 1_024, head * 2 > order.count else { return }
    order.removeFirst(head)
    head = 0
  }
}
