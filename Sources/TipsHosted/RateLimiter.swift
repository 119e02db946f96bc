/// Per-account request rate limits (`--account-rate`): a token bucket per account, refilled at `rate` tokens a
/// second up to `burst`. Pure (the caller passes the time) and bounded: buckets that are full again are forgotten.
public struct RateLimiter: Sendable {
  public let rate: Double
  public let burst: Double
  private var buckets: [String: Bucket] = [:]

  struct Bucket {
    var tokens: Double
    var at: Double
  }

  /// `rate` requests a second on average, bursts of up to `burst` (default: two seconds' worth, at least 1).
  public init(rate: Double, burst: Double? = nil) {
    precondition(rate > 0)
    self.rate = rate
    self.burst = max(1, burst ?? rate * 2)
  }

  /// Takes one token for `account` at `now` (seconds); nil when allowed, else the seconds until one is available.
  public mutating func take(_ account: String, now: Double) -> Double? {
    var bucket = buckets[account] ?? Bucket(tokens: burst, at: now)
    bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.at) * rate)
    bucket.at = now
    // (A hair of tolerance: 0.1 s at 10/s refills 0.9999999999999943 tokens in floating point.)
    guard bucket.tokens >= 1 - 1e-9 else {
      buckets[account] = bucket
      return (1 - bucket.tokens) / rate
    }
    bucket.tokens = max(0, bucket.tokens - 1)
    buckets[account] = bucket
    return nil
  }

  /// Forgets buckets that have refilled completely by `now` (the limiter's memory stays proportional to the accounts
  /// active in the last `burst / rate` seconds).
  public mutating func forgetFull(now: Double) {
    buckets = buckets.filter { _, bucket in bucket.tokens + max(0, now - bucket.at) * rate < burst }
  }

  /// Accounts with a bucket now.
  public var tracked: Int { buckets.count }
}

/// Deadlines by key, earliest first: when each resident account's engine next changes with time (a `within` window
/// closing, a cooldown ending) — the node arms one timer for the earliest. A binary heap with lazy deletion: updating
/// a key pushes a new entry and older ones are skipped when they surface.
public struct DeadlineQueue<Key: Hashable & Sendable>: Sendable {
  private var heap: [(at: Double, key: Key, version: UInt64)] = []
  private var current: [Key: (at: Double, version: UInt64)] = [:]
  private var versions: UInt64 = 0

  public init() {}

  /// Sets (or clears, with nil) a key's deadline.
  public mutating func set(_ key: Key, _ at: Double?) {
    guard let at, at.isFinite else {
      current[key] = nil
      return
    }
    if let existing = current[key], existing.at == at { return }
    versions += 1
    current[key] = (at, versions)
    heap.append((at, key, versions))
    siftUp(heap.count - 1)
    if heap.count > 64 && heap.count > current.count * 4 { rebuild() }
  }

  /// The earliest deadline, if any.
  public mutating func earliest() -> Double? {
    dropStale()
    return heap.first?.at
  }

  /// Removes and returns the keys due at `now` (deadline ≤ now), earliest first.
  public mutating func popDue(_ now: Double) -> [Key] {
    var due: [Key] = []
    while true {
      dropStale()
      guard let top = heap.first, top.at <= now else { break }
      due.append(top.key)
      current[top.key] = nil
      removeTop()
    }
    return due
  }

  public var count: Int { current.count }

  private mutating func dropStale() {
    while let top = heap.first, current[top.key]?.version != top.version { removeTop() }
  }

  private mutating func removeTop() {
    heap.swapAt(0, heap.count - 1)
    heap.removeLast()
    if !heap.isEmpty { siftDown(0) }
  }

  private mutating func rebuild() {
    heap = current.map { ($0.value.at, $0.key, $0.value.version) }
    for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
  }

  private func less(_ a: Int, _ b: Int) -> Bool { heap[a].at < heap[b].at }

  private mutating func siftUp(_ start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard less(child, parent) else { return }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private mutating func siftDown(_ start: Int) {
    var parent = start
    while true {
      let left = parent * 2 + 1
      guard left < heap.count else { return }
      var smallest = left
      if left + 1 < heap.count && less(left + 1, left) { smallest = left + 1 }
      guard less(smallest, parent) else { return }
      heap.swapAt(smallest, parent)
      parent = smallest
    }
  }
}
