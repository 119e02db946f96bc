import TipsEngine
import TipsRecords

/// The operations this device made that PostgreSQL has not committed yet, oldest first, mirrored in `sync_outbox`.
///
/// Bounded by merging: a newer operation of the same register supersedes an older one still queued (a device's
/// display counter of a record, a parameter's value, a record's eligibility reset), a datastore reset supersedes
/// everything queued before it, a resetEligibility the record's queued invalidations, and an event keeps at most as
/// many queued donations as its history keeps, plus at most one (an older one could never be in any device's history:
/// this device alone has that many newer ones; its count lives on in the newest queued operation's cumulative count,
/// which is why the newest queued donation is never the one dropped, even when it is the oldest in history order).
struct Outbox {
  struct Entry {
    var operation: SyncOperation
    var payload: String
    /// Wall-clock seconds when it was queued.
    var created: Double
    /// The register it belongs to (superseded by a newer one of the same register).
    var register: String?
  }

  private(set) var entries: [Int64: Entry] = [:]
  private var order: [Int64] = []
  private var head = 0
  private var registers: [String: Int64] = [:]
  /// Queued donations per event, in queue order.
  private var donations: [String: [Int64]] = [:]
  /// Queued invalidations per record key.
  private var invalidations: [String: [Int64]] = [:]

  var count: Int { entries.count }

  /// When the oldest queued operation was queued.
  var oldestCreated: Double? {
    var index = head
    while index < order.count {
      if let entry = entries[order[index]] { return entry.created }
      index += 1
    }
    return nil
  }

  /// The oldest `limit` operations.
  func first(_ limit: Int) -> [Entry] { first(limit) { $0 } }

  /// The oldest `limit` operations, each as `transform` makes it from its entry (read in place: a hosted turn takes
  /// its seq and payload, not a copy of the whole entry).
  func first<T>(_ limit: Int, _ transform: (borrowing Entry) -> T) -> [T] {
    var result: [T] = []
    var index = head
    while index < order.count && result.count < limit {
      if let slot = entries.index(forKey: order[index]) { result.append(transform(entries.values[slot])) }
      index += 1
    }
    return result
  }

  /// Queues an operation (restoring one from the store when `restoring`), adding to `writes` the writes that mirror
  /// it and the supersessions it caused. `donationLimit` is the event's history bound.
  mutating func add(
    _ operation: SyncOperation, created: Double, donationLimit: (String) -> Int, restoring: Bool = false,
    into writes: inout SyncEffects
  ) {
    let seq = operation.seq
    var register: String?
    switch operation.body {
    case .reset:
      for old in Array(entries.keys) { remove(old, into: &writes) }
    case .display(let key, _, _, _, _, _):
      register = "display\u{1E}" + key
    case .parameter(let id, _):
      register = "parameter\u{1E}" + id
    case .variant(let tip, _):
      register = "variant\u{1E}" + tip
    case .cooldown:
      register = "cooldown"
    case .exposure(let tip, _, _):
      register = "exposure\u{1E}" + tip
    case .resetEligibility(let key):
      register = "eligibility\u{1E}" + key
      for old in invalidations[key] ?? [] { remove(old, into: &writes) }
      if let display = registers["display\u{1E}" + key] { remove(display, into: &writes) }
    case .invalidate(let key, _, _):
      invalidations[key, default: []].append(seq)
    case .donation(let event, _, _, _):
      donations[event, default: []].append(seq)
    }
    if let register, let old = registers[register] { remove(old, into: &writes) }
    if let register { registers[register] = seq }
    let payload = operation.payload
    entries[seq] = Entry(operation: operation, payload: payload, created: created, register: register)
    order.append(seq)
    if !restoring { writes.write(.outboxAppend(seq: seq, created: created, op: payload)) }
    if case .donation(let event, _, _, _) = operation.body {
      let limit = donationLimit(event)
      // The newest queued donation carries the highest cumulative count: when it is also the oldest in history
      // order (donations tied at one instant sort by their info), dropping it would lose that count, so it stays,
      // one over the bound, until a newer donation carries the count on.
      while let queued = donations[event], queued.count > limit {
        let oldest = oldestDonation(queued)
        guard oldest != queued.last else { break }
        remove(oldest, into: &writes)
      }
    }
  }

  /// The queued donation that comes first in history order.
  private func oldestDonation(_ seqs: [Int64]) -> Int64 {
    var oldest = seqs[0]
    for seq in seqs.dropFirst() {
      guard case .donation(_, let at, let info, _) = entries[seq]?.operation.body,
        case .donation(_, let oldestAt, let oldestInfo, _) = entries[oldest]?.operation.body
      else { continue }
      if Donation.precedes(Donation(at: at, info: info), Donation(at: oldestAt, info: oldestInfo)) { oldest = seq }
    }
    return oldest
  }

  /// Removes an operation (committed by PostgreSQL, or superseded), adding the write that mirrors it to `writes`;
  /// nothing when it is not queued.
  mutating func remove(_ seq: Int64, into writes: inout SyncEffects) {
    guard let entry = entries.removeValue(forKey: seq) else { return }
    if let register = entry.register, registers[register] == seq { registers[register] = nil }
    switch entry.operation.body {
    case .donation(let event, _, _, _):
      Self.remove(seq, under: event, from: &donations)
    case .invalidate(let key, _, _):
      Self.remove(seq, under: key, from: &invalidations)
    default:
      break
    }
    while head < order.count && entries[order[head]] == nil { head += 1 }
    if head > 1024 && head * 2 > order.count {
      order.removeFirst(head)
      head = 0
    }
    writes.write(.outboxDelete(seq: seq))
  }

  /// Takes `seq` out of `key`'s list, and the list out when that empties it: one hash of the key (every committed
  /// donation comes through here).
  private static func remove(_ seq: Int64, under key: String, from lists: inout [String: [Int64]]) {
    guard let index = lists.index(forKey: key) else { return }
    lists.values[index].removeAll { $0 == seq }
    if lists.values[index].isEmpty { lists.remove(at: index) }
  }
}
