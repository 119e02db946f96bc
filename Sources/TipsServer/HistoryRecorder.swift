import TipsEngine
import TipsStore

/// Turns what the server sees into lifecycle history entries: a mutation's variant assignments, its donations of
/// tracked events (a registered tip's goal, the app-closed event) and its tip changes (an eligibility change when
/// status or `shouldDisplay` differs from what was last recorded for the tip, preceded by an invalidation when the
/// tip became invalidated); impressions and actions are handed in by their handlers. Assigns cursors. The engine
/// stays pure: everything here reads its results.
///
/// Not thread-safe: the loop thread only.
final class HistoryRecorder {
  /// False with `--history-days 0`: nothing is recorded.
  let enabled: Bool
  let appClosedEvent: String?
  /// The newest cursor assigned (committed or not). `@exclusivity(unchecked)`, like the turn's hot fields: one
  /// owner (the loop thread), never passed inout across a call that touches it again; the dynamic checks were a
  /// measurable share of recording a donation.
  @exclusivity(unchecked) private(set) var lastCursor: Int64
  /// The eligibility last recorded per tip (what the datastore's `history_tips` holds after the commit).
  private var recorded: [String: RecordedTipState]
  /// Events whose donations are recorded: every registered tip's goal event, and the app-closed event.
  private(set) var trackedEvents: Set<String> = [] {
    didSet { lastLookup = nil }
  }
  /// The last event looked up in ``trackedEvents`` and the answer: donations come in runs of the same event, and
  /// comparing two short strings costs far less than hashing one.
  @exclusivity(unchecked) private var lastLookup: (event: String, tracked: Bool)?

  /// Whether donations of `eventID` are recorded.
  func tracks(_ eventID: String) -> Bool {
    if let lastLookup, lastLookup.event == eventID { return lastLookup.tracked }
    let tracked = !trackedEvents.isEmpty && trackedEvents.contains(eventID)
    lastLookup = (eventID, tracked)
    return tracked
  }

  init(enabled: Bool, appClosedEvent: String?, state: HistoryState) {
    self.enabled = enabled
    self.appClosedEvent = appClosedEvent
    lastCursor = state.lastCursor
    recorded = state.tips
  }

  /// Re-reads the goal events of the registered tips (after a registration or an unregistration).
  func refreshTrackedEvents(_ engine: Engine) {
    var events: Set<String> = []
    if let appClosedEvent { events.insert(appClosedEvent) }
    for id in engine.registeredTipIDs {
      if let goal = engine.definition(of: id)?.goal { events.insert(goal.eventID) }
    }
    trackedEvents = events
  }

  /// The entries a mutation causes, in order: donations of tracked events (`donation`, the hot path: no
  /// `HistoryEvent` is built for them), variant assignments, then per changed tip an invalidation (when it became
  /// invalidated) and the eligibility change (`emit`). Cursors not yet assigned. `now` is read only when an entry
  /// needs it (a donation carries its own instant).
  private func derive(
    _ mutation: Mutation, now: () -> Timestamp, donation: (String, Timestamp) -> Void, _ emit: (HistoryEvent) -> Void
  ) {
    var instant: Timestamp?
    func at() -> Timestamp {
      if let instant { return instant }
      let value = now()
      instant = value
      return value
    }
    for write in mutation.writes {
      switch write {
      case .donation(let eventID, let given, _):
        if tracks(eventID) { donation(eventID, given.at) }
      case .variantAssignment(let tipID, let variant?):
        emit(HistoryEvent(kind: .variant, at: at(), tipID: tipID, variant: variant))
      case .exposure(let tipID, let variant, let since?):
        emit(.exposure(tip: tipID, variant: variant, at: since))
      default:
        continue
      }
    }
    for change in mutation.changes {
      guard case .tip(let state) = change else { continue }
      let new = RecordedTipState(state)
      let old = recorded[state.id]
      recorded[state.id] = new
      if let old, old.status == new.status, old.reason == new.reason, old.shouldDisplay == new.shouldDisplay {
        continue
      }
      if new.status == "invalidated" && old?.status != "invalidated" {
        emit(HistoryEvent(kind: .invalidation, at: at(), tipID: state.id, variant: state.variant, reason: new.reason))
      }
      emit(
        HistoryEvent(
          kind: .eligibility, at: at(), tipID: state.id, variant: state.variant, reason: new.reason, status: new.status,
          shouldDisplay: new.shouldDisplay))
    }
  }

  /// The entries a mutation causes, as an array, cursors assigned (the daemon's start, before the first turn).
  func entries(for mutation: Mutation, now: Timestamp) -> [HistoryEvent] {
    guard enabled else { return [] }
    var out: [HistoryEvent] = []
    derive(mutation, now: { now }, donation: { out.append(.donation(event: $0, at: $1)) }) { out.append($0) }
    assignCursors(&out)
    return out
  }

  /// Stages `leading` and the entries `mutation` causes on the turn, cursors assigned, counted in `metrics`.
  /// Returns the entries the analytics stream carries (nil or empty for donations, the usual case).
  ///
  /// Inlined into the caller for the hot path — a donation that changed no tip (nearly all of them), which records
  /// at most its own entry — so that nothing else (the clock closure, an array to return) is built for it.
  @inline(__always)
  func record(
    _ mutation: Mutation, leading: [HistoryEvent], now: () -> Timestamp, into turn: Turn,
    metrics: OperationalMetrics
  ) -> [HistoryEvent]? {
    guard enabled else { return nil }
    if leading.isEmpty && mutation.changes.isEmpty && mutation.writes.count == 1,
      let (eventID, at) = mutation.writes[0].donatedEvent
    {
      if tracks(eventID) { stageDonation(eventID, at: at, into: turn, metrics: metrics) }
      return nil
    }
    return recordEntries(mutation, leading: leading, now: now, into: turn, metrics: metrics)
  }

  /// ``record(_:leading:now:into:metrics:)`` off the hot path.
  @inline(never)
  private func recordEntries(
    _ mutation: Mutation, leading: [HistoryEvent], now: () -> Timestamp, into turn: Turn,
    metrics: OperationalMetrics
  ) -> [HistoryEvent] {
    var streamed: [HistoryEvent] = []
    func stage(_ event: HistoryEvent) {
      var event = event
      lastCursor += 1
      event.cursor = lastCursor
      turn.stage(historyEntry: event)
      metrics.historyEvents[event.kind.code] += 1
      if event.kind.isStreamed { streamed.append(event) }
    }
    for event in leading { stage(event) }
    derive(
      mutation, now: now,
      donation: { eventID, at in stageDonation(eventID, at: at, into: turn, metrics: metrics) }, stage)
    return streamed
  }

  /// Stages a tracked event's donation entry with the next cursor.
  @inline(__always)
  private func stageDonation(_ eventID: String, at: Timestamp, into turn: Turn, metrics: OperationalMetrics) {
    lastCursor += 1
    turn.stageDonation(cursor: lastCursor, event: eventID, at: at)
    metrics.historyEvents[HistoryEvent.Kind.donation.code] += 1
  }

  /// After a failed commit: cursors continue after the newest one stored (the lost ones were never announced).
  func commitFailed(lastStored: Int64) {
    lastCursor = lastStored
  }

  /// Assigns the next cursors, in order.
  private func assignCursors(_ events: inout [HistoryEvent]) {
    for index in events.indices {
      lastCursor += 1
      events[index].cursor = lastCursor
    }
  }
}
