// ConnectionLimiter: per-peer connection limits, so one peer's flood of connections is refused cheaply and never
// starves the clients already connected (#27).

/// The limits on new connections (`tipsd serve --max-connections-per-peer`, `--peer-connection-rate`,
/// `--handshake-timeout`). A peer is a uid on the Unix socket (from `SO_PEERCRED`) and an IP address on the TCP
/// listener.
public struct ConnectionLimits: Sendable, Equatable {
  /// Connections one peer may hold open at once; 0: no per-peer limit (`--max-connections` still holds).
  public var perPeer: Int
  /// New connections a second one peer may open on average; 0: no rate limit.
  public var ratePerPeer: Double
  /// New connections one peer may open in a burst (default: two seconds' worth).
  public var burstPerPeer: Double
  /// Seconds a TCP peer has to finish its HTTP request or WebSocket upgrade before it is closed.
  public var handshakeTimeout: Double
  /// Connections accepted per listener per loop turn: the rest wait in the kernel's backlog while the connections
  /// already established are read and written (not a command-line option).
  public var acceptsPerTurn: Int

  public static let defaultPerPeer = 128
  public static let defaultRatePerPeer: Double = 200
  public static let defaultHandshakeTimeout: Double = 10

  public init(
    perPeer: Int = ConnectionLimits.defaultPerPeer, ratePerPeer: Double = ConnectionLimits.defaultRatePerPeer,
    burstPerPeer: Double? = nil, handshakeTimeout: Double = ConnectionLimits.defaultHandshakeTimeout,
    acceptsPerTurn: Int = 16
  ) {
    self.perPeer = perPeer
    self.ratePerPeer = ratePerPeer
    self.burstPerPeer = burstPerPeer ?? max(1, ratePerPeer * 2)
    self.handshakeTimeout = handshakeTimeout
    self.acceptsPerTurn = max(1, acceptsPerTurn)
  }

  /// No per-peer limits (tests and the bench's own load).
  public static let unlimited = ConnectionLimits(perPeer: 0, ratePerPeer: 0)
}

/// Why a new connection was refused.
public enum ConnectionRefusal: Sendable, Equatable, CustomStringConvertible {
  /// The peer already holds `limit` connections.
  case perPeer(limit: Int)
  /// The peer opened connections faster than `limit` a second; one more is allowed after `retryAfter` seconds.
  case rate(limit: Double, retryAfter: Double)

  public var description: String {
    switch self {
    case .perPeer(let limit):
      return "too many connections from this peer: at most \(limit) at once (--max-connections-per-peer)"
    case .rate(let limit, let retryAfter):
      let shown = limit == limit.rounded() ? String(Int(limit)) : String(limit)
      let wait = (retryAfter * 1000).rounded(.up) / 1000
      return "too many new connections from this peer: at most \(shown) a second (--peer-connection-rate); "
        + "retry after \(wait) s"
    }
  }

  /// `peer` or `rate`, for the error's data and the metrics.
  public var scope: String {
    switch self {
    case .perPeer: "peer"
    case .rate: "rate"
    }
  }
}

/// Counts each peer's open connections and the rate of its new ones (a token bucket per peer). Pure apart from the
/// clock the caller passes; memory stays proportional to the peers connected or recently active. Loop thread only.
public final class ConnectionLimiter {
  public let limits: ConnectionLimits
  private var open: [String: Int] = [:]
  /// The per-peer connection rate (nil with `--peer-connection-rate 0`).
  private var buckets: RateLimiter?
  private var lastSweep: Double = 0
  /// Connections refused so far, by ``ConnectionRefusal/scope``.
  public private(set) var refused: [String: Int] = [:]

  public init(limits: ConnectionLimits) {
    self.limits = limits
    if limits.ratePerPeer > 0 { buckets = RateLimiter(rate: limits.ratePerPeer, burst: limits.burstPerPeer) }
  }

  /// Admits one new connection from `peer` at `now` (seconds) — counted until ``release(_:)`` — or says why not.
  public func admit(_ peer: String, now: Double) -> ConnectionRefusal? {
    if limits.perPeer > 0, open[peer, default: 0] >= limits.perPeer {
      refused["peer", default: 0] += 1
      return .perPeer(limit: limits.perPeer)
    }
    if let wait = take(peer, now: now) {
      refused["rate", default: 0] += 1
      return .rate(limit: limits.ratePerPeer, retryAfter: wait)
    }
    open[peer, default: 0] += 1
    return nil
  }

  /// Charges `peer` one new connection's worth of its rate without opening one (a failed sign-in: a flood of
  /// invalid tokens is limited like a flood of connections). Returns the refusal the next connection would get.
  @discardableResult
  public func charge(_ peer: String, now: Double) -> ConnectionRefusal? {
    take(peer, now: now).map { .rate(limit: limits.ratePerPeer, retryAfter: $0) }
  }

  /// The seconds until `peer` may open a connection (or try to sign in) again, or nil if it may now. Takes nothing.
  public func retryAfter(_ peer: String, now: Double) -> Double? {
    buckets?.retryAfter(peer, now: now)
  }

  /// A connection admitted by ``admit(_:now:)`` closed.
  public func release(_ peer: String) {
    guard let count = open[peer] else { return }
    open[peer] = count > 1 ? count - 1 : nil
  }

  /// Connections `peer` holds open now.
  public func openConnections(_ peer: String) -> Int { open[peer] ?? 0 }

  /// Peers tracked now (open connections or a bucket not yet full).
  public var trackedPeers: Int {
    (buckets?.tracked ?? 0) + open.keys.filter { buckets?.isTracking($0) != true }.count
  }

  /// Takes a token from `peer`'s bucket: nil when allowed, else the seconds until one is available. Buckets full
  /// again are forgotten at most once a second.
  private func take(_ peer: String, now: Double) -> Double? {
    guard buckets != nil else { return nil }
    if now - lastSweep >= 1 {
      lastSweep = now
      buckets?.forgetFull(now: now)
    }
    return buckets?.take(peer, now: now)
  }
}

/// A log line that may repeat thousands of times a second under a flood: the first is written, then at most one
/// summary per `interval` seconds saying how many were left out.
public struct SampledLog: Sendable {
  public let interval: Double
  private var windowStart: Double = -.infinity
  private var suppressed = 0

  public init(interval: Double = 10) {
    self.interval = interval
  }

  /// Whether to write this occurrence now, and how many were left out since the last one written.
  public mutating func shouldLog(now: Double) -> (log: Bool, suppressed: Int) {
    if now - windowStart >= interval {
      windowStart = now
      let left = suppressed
      suppressed = 0
      return (true, left)
    }
    suppressed += 1
    return (false, 0)
  }
}
