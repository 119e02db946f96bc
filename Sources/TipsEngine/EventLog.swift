import TipsJSON

/// The donations of one event, oldest first, plus the indexes the engine keeps about it.
///
/// Donations live in contiguous columns with a moving head, so trimming the oldest is amortised O(1): their instants
/// (8 bytes each), and their associated values only once some stored donation has any (a log of plain donations — the
/// common case — costs 8 bytes a donation, not a `Donation`'s 16).
/// Every donation gets a sequence number that only grows (`firstSeq` is the number of the oldest kept one), which
/// lets the engine tell cheaply whether a `within` window's first donation moved since the last look.
/// Fields are `@exclusivity(unchecked)` for the same reason as ``TipSlot``'s.
final class EventLog {
  let id: String
  /// Position in the engine's list of logs (the key of ``WindowKey/event``).
  let number: Int
  /// Instants of the stored donations (from `head`), oldest first.
  @exclusivity(unchecked) private var times: ContiguousArray<Timestamp> = []
  /// Their associated values, index for index with `times` — or empty while none of them has any.
  @exclusivity(unchecked) private var infos: ContiguousArray<JSONObject?> = []
  @exclusivity(unchecked) private(set) var head = 0
  /// Sequence number of `times[head]`.
  @exclusivity(unchecked) private(set) var firstSeq = 0
  /// The explicit per-event cap, if one was set.
  @exclusivity(unchecked) var limit: Int?
  /// iOS 26's maximum age (seconds): a donation at least this old is invisible to every rule of the event (a plain
  /// count then reads the donations younger than it, not the lifetime count) and is trimmed from the log.
  @exclusivity(unchecked) var maxAge: Double?
  /// Donations over the app's life (since the last datastore reset), kept and dropped alike: what a plain `count`
  /// rule reads, as TipKit's does, while windows and filters read the bounded history.
  @exclusivity(unchecked) var lifetime = 0
  /// Registered tips (slot numbers, ascending) whose rules read this event.
  @exclusivity(unchecked) var dependents: [Int] = []
  /// Among `dependents`, the tips a donation of this event may still change (not saturated, see
  /// `Engine+Saturation`); valid while ``liveEpoch`` is the engine's ``Engine/liveEpoch``.
  @exclusivity(unchecked) var live: [Int] = []
  @exclusivity(unchecked) var liveEpoch = 0
  /// The shortest window any rule reads on this event, or its maximum age if shorter (∞ when neither): a donation
  /// now cannot make anything change by time before `now + minSpan`. Computed with ``live``.
  @exclusivity(unchecked) var minSpan = Double.infinity
  /// Cached counts of filtered rules (`where`, `largestGroupBy`, …) valid at `memoNow` for the current contents.
  @exclusivity(unchecked) private var memo: [FilterKey: Int] = [:]
  @exclusivity(unchecked) private var memoNow: Timestamp = -.infinity

  /// The engine's count of stored donations over every log, kept as each log changes (``Engine/storedDonationCount``).
  private let tally: DonationTally

  init(id: String, number: Int, tally: DonationTally) {
    self.id = id
    self.number = number
    self.tally = tally
  }

  /// Number of stored donations.
  var count: Int { times.count - head }

  /// Sequence number one past the newest donation.
  var endSeq: Int { firstSeq + count }

  /// The stored donations, oldest first.
  var donations: [Donation] { (0..<count).map { self[$0] } }

  /// The `i`-th stored donation, oldest first.
  subscript(i: Int) -> Donation { Donation(at: times[head + i], info: info(i)) }

  /// The associated values of the `i`-th stored donation, oldest first.
  @inline(__always)
  func info(_ i: Int) -> JSONObject? { infos.isEmpty ? nil : infos[head + i] }

  /// Stores `donation` at buffer position `index` (`times.count` appends).
  private func store(_ donation: Donation, at index: Int) {
    if infos.isEmpty {
      if donation.info != nil {
        infos = ContiguousArray(repeating: nil, count: times.count)
        infos.insert(donation.info, at: index)
      }
    } else {
      infos.insert(donation.info, at: index)
    }
    times.insert(donation.at, at: index)
    tally.stored += 1
  }

  /// Adds a donation (counting it in the lifetime count) and trims to `limit` (keeping the newest). Returns whether it
  /// went to the end; one older than the newest stored (a clock that went back, or one of another device) is inserted
  /// in ``Donation/precedes(_:_:canonical:)`` order instead.
  @discardableResult
  func append(_ donation: Donation, limit: Int, canonical: Bool) -> Bool {
    let atEnd = insert(donation, canonical: canonical)
    lifetime += 1
    trim(to: limit)
    return atEnd
  }

  /// Inserts a donation in ``Donation/precedes(_:_:canonical:)`` order (after those it does not precede), without
  /// counting it or trimming. Returns whether it went to the end.
  @discardableResult
  func insert(_ donation: Donation, canonical: Bool) -> Bool {
    if !memo.isEmpty { memo.removeAll(keepingCapacity: true) }
    guard count > 0, Donation.precedes(donation, self[count - 1], canonical: canonical) else {
      store(donation, at: times.count)
      return true
    }
    var low = head
    var high = times.count
    while low < high {
      let mid = (low + high) / 2
      if Donation.precedes(donation, self[mid - head], canonical: canonical) { high = mid } else { low = mid + 1 }
    }
    store(donation, at: low)
    return false
  }

  /// Keeps only the newest `limit` donations; returns whether any were dropped.
  @discardableResult
  func trim(to limit: Int) -> Bool {
    let excess = count - limit
    guard excess > 0 else { return false }
    head += excess
    firstSeq += excess
    tally.stored -= excess
    if !memo.isEmpty { memo.removeAll(keepingCapacity: true) }
    if head >= 64 && head * 2 >= times.count {
      times.removeFirst(head)
      if !infos.isEmpty { infos.removeFirst(head) }
      head = 0
      // Checked when compacting (amortised): once the last donation with associated values left, none is stored.
      if !infos.isEmpty, !infos.contains(where: { $0 != nil }) { infos = [] }
    }
    return true
  }

  /// Drops every donation (sequence numbers keep growing) and the lifetime count.
  func removeAll() {
    tally.stored -= count
    firstSeq += count
    times.removeAll()
    infos.removeAll()
    head = 0
    memo.removeAll()
    lifetime = 0
  }

  /// Replaces the contents (oldest first), trimmed to `limit`, with `lifetime` donations ever (at least those kept).
  func replace(with donations: [Donation], lifetime: Int, limit: Int) {
    removeAll()
    times.reserveCapacity(donations.count)
    for donation in donations { store(donation, at: times.count) }
    self.lifetime = max(lifetime, donations.count)
    trim(to: limit)
  }

  /// A window as the event's rules see it: no longer than the event's maximum age.
  @inline(__always)
  func effective(_ within: Double) -> Double {
    guard let maxAge else { return within }
    return min(within, maxAge)
  }

  /// What a plain `count` reads: the lifetime count, or with a maximum age the donations younger than it.
  @inline(__always)
  func plainCount(now: Timestamp) -> Int {
    guard let maxAge else { return lifetime }
    return count - windowStart(within: maxAge, now: now)
  }

  /// Drops the donations that aged out at `now`; returns whether any did.
  func trimAged(now: Timestamp) -> Bool {
    guard let maxAge else { return false }
    return trim(to: count - windowStart(within: maxAge, now: now))
  }

  /// Index (0-based from the oldest) of the first donation inside a window of `within` seconds (no longer than the
  /// maximum age) at `now`, i.e. the first with `at + within > now`. Donations are assumed to be stored in
  /// non-decreasing time order.
  func windowStart(within: Double, now: Timestamp) -> Int {
    let within = effective(within)
    var low = head
    var high = times.count
    times.withUnsafeBufferPointer { items in
      while low < high {
        let mid = (low + high) / 2
        if items[mid] + within > now { high = mid } else { low = mid + 1 }
      }
    }
    return low - head
  }

  /// Sequence number of the first donation inside the window (`endSeq` when none is).
  func windowStartSeq(within: Double, now: Timestamp) -> Int {
    firstSeq + windowStart(within: within, now: now)
  }

  /// The instant the oldest in-window donation leaves the window, if any donation is inside it.
  func nextExit(within: Double, now: Timestamp) -> Timestamp? {
    let start = windowStart(within: within, now: now)
    guard start < count else { return nil }
    return times[head + start] + effective(within)
  }

  /// The count an event rule measures: donations inside the window (if any) matching `where` (if any), or the
  /// largest group by `largestGroupBy` (if set). Plain counts are O(1), windows O(log n); filtered counts scan once
  /// per contents and instant (memoised, so many tips sharing a filter pay once).
  func measure(_ key: FilterKey, now: Timestamp) -> Int {
    if key.matching == nil && key.groupBy == nil {
      guard let within = key.within else { return plainCount(now: now) }
      return count - windowStart(within: within, now: now)
    }
    if memoNow != now {
      memo.removeAll(keepingCapacity: true)
      memoNow = now
    }
    if let cached = memo[key] { return cached }
    let start = (key.within ?? maxAge).map { windowStart(within: $0, now: now) } ?? 0
    var result = 0
    if let groupBy = key.groupBy {
      var groups: [JSONValue: Int] = [:]
      for i in start..<count {
        guard let info = info(i), let value = info[groupBy] else { continue }
        if let matching = key.matching, !Self.matches(info, matching) { continue }
        groups[value, default: 0] += 1
      }
      result = groups.values.max() ?? 0
    } else if let matching = key.matching {
      for i in start..<count where Self.matches(info(i), matching) { result += 1 }
    }
    memo[key] = result
    return result
  }

  /// Whether associated values contain every pair of `matching` (JSON equality; numbers compare by value).
  static func matches(_ info: JSONObject?, _ matching: JSONObject) -> Bool {
    for (key, value) in matching {
      guard let info, let actual = info[key], actual == value else { return false }
    }
    return true
  }
}

/// What an event rule counts, minus the comparison: the memo key of ``EventLog/measure(_:now:)``.
struct FilterKey: Hashable {
  var within: Double?
  var matching: JSONObject?
  var groupBy: String?
}

/// A `(event, window)` pair some tip reads; the engine watches when its first in-window donation moves.
struct WindowKey: Hashable {
  var event: Int
  var within: Double
}

/// The tips reading a window, and the window's first donation when they were last brought up to date.
final class WindowWatch {
  var dependents: [Int] = []
  var startSeq: Int

  init(startSeq: Int) {
    self.startSeq = startSeq
  }
}

// MARK: - Sorted slot lists

extension Array where Element == Int {
  /// Inserts into an ascending array, keeping it sorted and unique (appending is the fast path).
  mutating func insertSorted(_ value: Int) {
    if let last, last < value {
      append(value)
      return
    }
    let index = lowerBound(value)
    if index < count && self[index] == value { return }
    insert(value, at: index)
  }

  /// Removes a value from an ascending array, if present.
  mutating func removeSorted(_ value: Int) {
    let index = lowerBound(value)
    if index < count && self[index] == value { remove(at: index) }
  }

  private func lowerBound(_ value: Int) -> Int {
    var low = 0
    var high = count
    while low < high {
      let mid = (low + high) / 2
      if self[mid] < value { low = mid + 1 } else { high = mid }
    }
    return low
  }
}

/// Donations stored over every event log of an engine, counted as each log stores and drops them: a hosted node asks
/// before every donation (`--account-max-donations`), and summing the logs read every event's log each time (#47).
final class DonationTally {
  @exclusivity(unchecked) var stored = 0
}
