/// Deadlines by key, earliest first: when each resident account's engine next changes with time (a `within` window
/// closing, a cooldown ending) — the node arms one timer for the earliest. A binary heap with lazy deletion: updating
/// a key pushes a new entry and older ones are skipped when they surface.
///
/// Inlinable, so each user specializes it for its key (#47: used generically from `TipsServer`, every set went through
/// the generic dictionary's witness tables).
public struct DeadlineQueue<Key: Hashable & Sendable>: Sendable {
  @usableFromInline var heap: [(at: Double, key: Key, version: UInt64)] = []
  @usableFromInline var current: [Key: (at: Double, version: UInt64)] = [:]
  @usableFromInline var versions: UInt64 = 0

  @inlinable public init() {}

  /// Sets (or clears, with nil) a key's deadline.
  @inlinable public mutating func set(_ key: Key, _ at: Double?) {
    guard let at, at.isFinite else {
      current[key] = nil
      return
    }
    if let index = current.index(forKey: key) {  // one hash of the key for one already set (the usual case)
      guard current.values[index].at != at else { return }
      versions += 1
      current.values[index] = (at, versions)
    } else {
      versions += 1
      current[key] = (at, versions)
    }
    heap.append((at, key, versions))
    siftUp(heap.count - 1)
    if heap.count > 64 && heap.count > current.count * 4 { rebuild() }
  }

  /// The earliest deadline, if any.
  @inlinable public mutating func earliest() -> Double? {
    dropStale()
    return heap.first?.at
  }

  /// Removes and returns the keys due at `now` (deadline ≤ now), earliest first.
  @inlinable public mutating func popDue(_ now: Double) -> [Key] {
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

  @inlinable public var count: Int { current.count }

  /// A key's deadline, if it has one.
  @inlinable public func deadline(of key: Key) -> Double? { current[key]?.at }

  @inlinable mutating func dropStale() {
    while let top = heap.first, current[top.key]?.version != top.version { removeTop() }
  }

  @inlinable mutating func removeTop() {
    heap.swapAt(0, heap.count - 1)
    heap.removeLast()
    if !heap.isEmpty { siftDown(0) }
  }

  @inlinable mutating func rebuild() {
    heap = current.map { ($0.value.at, $0.key, $0.value.version) }
    for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
  }

  @inlinable func less(_ a: Int, _ b: Int) -> Bool { heap[a].at < heap[b].at }

  @inlinable mutating func siftUp(_ start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard less(child, parent) else { return }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  @inlinable mutating func siftDown(_ start: Int) {
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
