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
  /// The newest cursor assigned (committed or not).
  private(set) var lastCursor: Int64
  /// The eligibility last recorded per tip (what the datastore's `history_tips` holds after the commit).
  private var recorded: [String: RecordedTipState]
  /// Events whose donations are recorded: every registered tip's goal event, and the app-closed event.
  private(set) var trackedEvents: Set<String> = []

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

  /// The entries a mutation causes, at `now`, in order: donations of tracked events, variant assignments, then per
  /// changed tip an invalidation (when it became invalidated) and the eligibility change. Cursors not yet assigned.
  func entries(for mutation: Mutation, now: Timestamp) -> [HistoryEvent] {
    guard enabled else { return [] }
    var out: [HistoryEvent] = []
    for write in mutation.writes {
      switch write {
      case .donation(let eventID, let donation, _):
        if !trackedEvents.isEmpty && trackedEvents.contains(eventID) {
          out.append(.donation(event: eventID, at: donation.at))
        }
      case .variantAssignment(let tipID, let variant?):
        out.append(HistoryEvent(kind: .variant, at: now, tipID: tipID, variant: variant))
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
        out.append(HistoryEvent(kind: .invalidation, at: now, tipID: state.id, variant: state.variant, reason: new.reason))
      }
      out.append(
        HistoryEvent(
          kind: .eligibility, at: now, tipID: state.id, variant: state.variant, reason: new.reason, status: new.status,
          shouldDisplay: new.shouldDisplay))
    }
    return out
  }

  /// Assigns the next cursors, in order.
  func assignCursors(_ events: inout [HistoryEvent]) {
    for index in events.indices {
      lastCursor += 1
      events[index].cursor = lastCursor
    }
  }
}
