public import TipsEngine
import TipsJSON
public import TipsSync

/// What the repair net (issue #44) compares between a node's resident account and the same account loaded afresh from
/// PostgreSQL's rows at the same cursor: the merge model's state (every `sync_state` row: lifetimes, display counters,
/// eligibility, invalidations, parameters, variants, cooldown, exposures) and what the engine shows of it — each tip
/// record (display count and duration, invalidation), each event's lifetime count, each stored parameter. One line per
/// fact, so two digests compare as sets and their difference can be told.
///
/// The engine's lines catch an engine gone apart from its own model (a record the model would not give it), which the
/// model's rows alone cannot; what changes with time alone (a tip's status under a date rule, an event's donations
/// aging out) is left out, so a check never races the node's time-driven changes.
public struct AccountDigest: Sendable, Equatable {
  public let lines: Set<String>

  public init(lines: Set<String>) { self.lines = lines }

  public init(model: SyncModel, engine: Engine) {
    var lines: Set<String> = []
    for row in model.stateRows() {
      lines.insert("state \(row.kind) \(row.device) \(row.key)=\(row.value)")
    }
    for key in engine.recordKeys {
      lines.insert("record \(key)=\(Self.describe(engine.record(forKey: key)))")
    }
    for event in engine.eventIDs {
      let lifetime = engine.lifetimeCount(event)
      if lifetime > 0 { lines.insert("lifetime \(event)=\(lifetime)") }
    }
    for (id, value) in engine.storedParameters { lines.insert("parameter \(id)=\(value.jsonString)") }
    self.lines = lines
  }

  /// The lines only this digest has and those only `other` has, each sorted.
  public func difference(from other: AccountDigest) -> (ours: [String], theirs: [String]) {
    (lines.subtracting(other.lines).sorted(), other.lines.subtracting(lines).sorted())
  }

  static func describe(_ record: TipRecord) -> String {
    var parts = ["count \(record.displayCount)", "duration \(record.displayedDuration)"]
    if let reason = record.invalidationReason {
      parts.append("invalidated \(reason) at \(record.invalidatedAt.map { "\($0)" } ?? "?")")
    }
    if let first = record.firstDisplayedAt { parts.append("first \(first)") }
    if let last = record.lastDisplayedAt { parts.append("last \(last)") }
    return parts.joined(separator: ", ")
  }
}
