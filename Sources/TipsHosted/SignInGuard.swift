public import TipsTransport

/// What a hosted node spends on signing sessions in, bounded whatever arrives: a state machine with no I/O (the caller
/// verifies tokens and passes the time), so each rule is tested on its own.
///
/// A forged RS256 or ES256 token can only be refused by checking its signature — tens of microseconds to a hundred
/// on the node's one loop thread — and behind a balancer every session comes from the balancer's address, so a
/// per-peer limit cannot tell an attacker from everyone else. What the guard does instead:
///
/// - **Verified tokens are remembered** (the exact token, until it stops being accepted; at most
///   ``Configuration/cacheBytes`` of them, oldest forgotten first). A client reconnecting with its token, or an
///   attacker replaying a valid one, costs no cryptography. Forgotten on a key reload.
/// - **A node-wide budget of failed signature checks** (``Configuration/failureRate`` a second, bursts of twice as
///   many): each token whose signature does not verify spends one. With the budget spent, a token is refused before
///   its signature is checked (``AuthError/Code/throttled``, with the seconds until the budget allows one more) —
///   unless its subject signed in on this node recently (below), so a flood of forged tokens costs bounded CPU and
///   returning users keep signing in.
/// - **Subjects seen valid** (``Configuration/knownSubjects`` at most, each for ``Configuration/knownFor``) bypass
///   the node-wide budget. A forged token that claims such a subject spends that subject's own budget
///   (``Configuration/subjectFailures`` a minute): an attacker claiming their own account — or a victim's — is
///   refused after a few attempts, while everyone else is unaffected.
///
/// Only tokens whose claims this node accepts (audience, issuer, expiry, subject) reach this guard at all: the
/// verifier refuses the rest before any cryptography.
public struct SignInGuard: Sendable {
  public struct Configuration: Sendable {
    /// Failed signature checks a second the node spends on (bursts of twice as many).
    public var failureRate: Double
    /// Failed signature checks a minute one subject may cause (bursts of as many).
    public var subjectFailures: Double = 10
    /// Bytes of verified tokens remembered.
    public var cacheBytes = 8 << 20
    /// Subjects remembered as signed in recently.
    public var knownSubjects = 100_000
    /// How long a subject stays known after its last valid sign-in, in seconds.
    public var knownFor: Double = 7 * 86_400

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

    public init(subject: String, expiresAt: Double, acceptedUntil: Double) {
      self.subject = subject
      self.expiresAt = expiresAt
      self.acceptedUntil = acceptedUntil
    }
  }

  public let configuration: Configuration
  private var budget: RateLimiter
  private var subjectBudgets: RateLimiter
  private var verified: [String: Remembered] = [:]
  private var verifiedOrder: [String] = []
  private var verifiedHead = 0
  private var verifiedBytes = 0
  private var known: [String: Double] = [:]
  private var knownOrder: [String] = []
  private var knownHead = 0
  /// Tokens refused before any signature check, since start (`/metrics`).
  public private(set) var throttled = 0
  /// Signature checks that failed, since start.
  public private(set) var failures = 0

  private static let node = "node"

  public init(_ configuration: Configuration) {
    self.configuration = configuration
    budget = RateLimiter(rate: configuration.failureRate, burst: configuration.failureRate * 2)
    subjectBudgets = RateLimiter(
      rate: configuration.subjectFailures / 60, burst: max(1, configuration.subjectFailures))
  }

  /// The token, if it was verified before and is still accepted at `now` (no cryptography needed).
  public func remembered(_ token: String, now: Double) -> Remembered? {
    guard let entry = verified[token], now < entry.acceptedUntil else { return nil }
    return entry
  }

  /// Whether a token claiming `subject` (its claims otherwise accepted) may have its signature checked now; nil
  /// when it may, else the seconds until it may.
  public mutating func mayCheck(subject: String, now: Double) -> Double? {
    if let wait = subjectBudgets.retryAfter(subject, now: now) {
      throttled += 1
      return wait
    }
    if let seen = known[subject], now - seen < configuration.knownFor { return nil }
    if let wait = budget.retryAfter(Self.node, now: now) {
      throttled += 1
      return wait
    }
    return nil
  }

  /// A token claiming `subject` failed its signature check: it spends the node's budget and the subject's.
  public mutating func failed(subject: String, now: Double) {
    failures += 1
    _ = budget.take(Self.node, now: now)
    _ = subjectBudgets.take(subject, now: now)
  }

  /// A token verified: remembered (within the cache's bytes), its subject known.
  public mutating func succeeded(_ token: String, _ entry: Remembered, now: Double) {
    if known[entry.subject] == nil { knownOrder.append(entry.subject) }
    known[entry.subject] = now
    while known.count > configuration.knownSubjects, knownHead < knownOrder.count {
      known[knownOrder[knownHead]] = nil
      knownHead += 1
    }
    compact(&knownOrder, head: &knownHead)
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
    subjectBudgets.forgetFull(now: now)
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
