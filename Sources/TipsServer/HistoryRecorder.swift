import TipsEngine
import TipsStore

/// Turns what the server sees into lifecycle history entries: a mutation's variant assignments, its donations of
/// tracked events (a registered tip's goal, the app-closed event) and its tip changes (an eligibility change when
/// status or `shouldDisplay` differs from what was last recorded for the tip, preceded by an invalidation when the
/// tip became invalidated); impressions and actions are handed in by their handlers. Assigns cursors. The engine
/// stays pure: everything here reads its results.
///
/// What it remembers between requests — the newest cursor and each tip's last recorded eligibility — moves as
/// entries are staged, ahead of the turn's commit. It is the datastore's again whenever a commit fails: the server
/// reads it back (``restore(_:)``, from `Datastore.historyState()`), together with the engine's durable state, so
/// the next entry is derived from what is stored, and the cursors of the lost entries (never announced: their
/// `analytics/event` notifications required the commit) are given again. Staging the memory with the turn instead
/// would cost the donation path and still leave the engine ahead; reading back costs only a failed commit.
///
/// Not thread-safe: the loop thread only.
final class HistoryRecorder {
  /// Hosted mode: the account's history is stored by PostgreSQL, which gives each commit's entries their cursors;
  /// the recorder's cursors are then provisional, and moved to what PostgreSQL gave after each commit
  /// (``committed(lastCursor:)``).
  func committed(lastCursor cursor: Int64) { lastCursor = cursor }

  /// False with `--history-days 0`: nothing is recorded.
  let enabled: Bool
  let appClosedEvent: String?
  /// The newest cursor assigned (committed or not). `@exclusivity(unchecked)`, like the turn's hot fields: one
  /// owner (the loop thread), never passed inout across a call that touches it again; the dynamic checks were a
  /// measurable share of recording a donation.
  @exclusivity(unchecked) private(set) var lastCursor: Int64
  /// The eligibility last recorded per tip (what the datastore's `history_tips` holds once the turn commits).
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

  /// Its memory: the newest cursor and each tip's last recorded eligibility.
  var state: HistoryState { HistoryState(lastCursor: lastCursor, tips: recorded) }

  /// After a failed commit: what the datastore holds (the newest cursor stored, each tip's last recorded
  /// eligibility).
  func restore(_ state: HistoryState) {
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
  /// invalidated) and the eligibility change (`emit`). Cursors not yet assigned. Entries are stamped with the
  /// mutation's own instant (``Mutation/at``, a time-driven change replayed at it) or else `now`, read only when an
  /// entry needs it (a donation carries its own instant).
  private func derive(
    _ mutation: Mutation, now: () -> Timestamp, donation: (String, Timestamp) -> Void, _ emit: (HistoryEvent) -> Void
  ) {
    // A time-driven change replayed at its own instant is stamped with it.
    var instant: Timestamp? = mutation.at
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

  /// Stages `leading` and the entries `mutation` causes on the turn, cursors assigned, counted in `counters`.
  /// Returns the entries the analytics stream carries (nil or empty for donations, the usual case).
  ///
  /// Inlined into the caller for the hot path — a donation that changed no tip (nearly all of them), which records
  /// at most its own entry — so that nothing else (the clock closure, an array to return) is built for it.
  @inline(__always)
  func record<Sink: HistorySink>(
    _ mutation: Mutation, leading: [HistoryEvent], now: () -> Timestamp, into turn: Sink,
    counters: ServerCounters
  ) -> [HistoryEvent]? {
    guard enabled else { return nil }
    if leading.isEmpty && mutation.changes.isEmpty && mutation.writes.count == 1,
      let (eventID, at) = mutation.writes[0].donatedEvent
    {
      if tracks(eventID) { stageDonation(eventID, at: at, into: turn, counters: counters) }
      return nil
    }
    return recordEntries(mutation, leading: leading, now: now, into: turn, counters: counters)
  }

  /// ``record(_:leading:now:into:counters:)`` off the hot path.
  @inline(never)
  private func recordEntries<Sink: HistorySink>(
    _ mutation: Mutation, leading: [HistoryEvent], now: () -> Timestamp, into turn: Sink,
    counters: ServerCounters
  ) -> [HistoryEvent] {
    var streamed: [HistoryEvent] = []
    func stage(_ event: HistoryEvent) {
      var event = event
      lastCursor += 1
      event.cursor = lastCursor
      turn.stage(historyEntry: event)
      counters.historyEvents[event.kind.code] += 1
      if event.kind.isStreamed { streamed.append(event) }
    }
    for event in leading { stage(event) }
    derive(
      mutation, now: now,
      donation: { eventID, at in stageDonation(eventID, at: at, into: turn, counters: counters) }, stage)
    return streamed
  }

  /// Stages a tracked event's donation entry with the next cursor.
  @inline(__always)
  private func stageDonation<Sink: HistorySink>(
    _ eventID: String, at: Timestamp, into turn: Sink, counters: ServerCounters
  ) {
    lastCursor += 1
    turn.stageDonation(cursor: lastCursor, event: eventID, at: at)
    counters.historyEvents[HistoryEvent.Kind.donation.code] += 1
  }

  /// Assigns the next cursors, in order.
  private func assignCursors(_ events: inout [HistoryEvent]) {
    for index in events.indices {
      lastCursor += 1
      events[index].cursor = lastCursor
    }
  }
}

/// Where the recorder stages entries: the turn's batch (the datastore's commit), or a hosted account's own batch
/// (its PostgreSQL commit). Both count what they stage as the request's durable work.
protocol HistorySink: AnyObject {
  /// Stages an entry (its cursor assigned).
  func stage(historyEntry: HistoryEvent)
  /// Stages a donation's entry (the hot path: encoded at once, no `HistoryEvent` built).
  func stageDonation(cursor: Int64, event: String, at: Double)
}

extension Turn: HistorySink {}
