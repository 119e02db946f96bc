import TipsEngine
import TipsProtocol

/// Every `tips/observe`, `actions/subscribe` and `analytics/subscribe` subscription and inspect watcher, and the one
/// place that turns engine changes, performed actions and history entries into complete notifications for their
/// subscribers.
final class SubscriptionRegistry {
  /// A `tips/observe` subscription.
  final class Observer {
    let id: String
    unowned let session: Session
    /// nil: every tip, including tips registered later.
    let tipIDs: Set<String>?
    let groups: Set<String>
    /// The `shouldDisplay` of the newest notification made for each tip (or given in the observe result); a change
    /// equal to it is not announced again.
    var lastAnnounced: [String: Bool] = [:]

    init(id: String, session: Session, tipIDs: Set<String>?, groups: Set<String>) {
      self.id = id
      self.session = session
      self.tipIDs = tipIDs
      self.groups = groups
    }

    func watches(tip id: String) -> Bool { tipIDs?.contains(id) ?? true }
  }

  /// An `actions/subscribe` subscription.
  final class ActionSubscriber {
    let id: String
    unowned let session: Session
    /// nil: actions of every tip.
    let tipIDs: Set<String>?

    init(id: String, session: Session, tipIDs: Set<String>?) {
      self.id = id
      self.session = session
      self.tipIDs = tipIDs
    }
  }

  /// An `analytics/subscribe` subscription: replaying the history from a cursor (catching up, paced by the client's
  /// reading, see ``Services/pumpAnalytics()``), then live.
  final class AnalyticsSubscriber {
    let id: String
    unowned let session: Session
    /// The newest cursor staged for it (while catching up: where the replay continues).
    var delivered: Int64
    /// Live: new events are staged as they are recorded. Catching up: they are read back from the datastore.
    var live: Bool

    init(id: String, session: Session, delivered: Int64, live: Bool) {
      self.id = id
      self.session = session
      self.delivered = delivered
      self.live = live
    }
  }

  /// An inspector's `inspect/state {watch: true}`: one `inspect/changed` after the next change.
  final class InspectWatcher {
    let id: String
    unowned let session: Session
    var armed = true

    init(id: String, session: Session) {
      self.id = id
      self.session = session
    }
  }

  enum Kind { case observe, actions, analytics }

  private(set) var observers: [String: Observer] = [:]
  private(set) var actionSubscribers: [String: ActionSubscriber] = [:]
  private(set) var analyticsSubscribers: [String: AnalyticsSubscriber] = [:]
  /// At most one per connection, by connection id.
  private(set) var inspectWatchers: [UInt64: InspectWatcher] = [:]
  /// Where ids come from (`sub-1`, `sub-2`, …; shared by every tenant's registry).
  private let ids: SubscriptionIDs

  init(ids: SubscriptionIDs = SubscriptionIDs()) {
    self.ids = ids
  }

  var count: Int { observers.count + actionSubscribers.count + analyticsSubscribers.count + inspectWatchers.count }

  /// Open subscriptions by kind (for `/metrics`).
  var countsByKind: [String: Int] {
    [
      "observe": observers.count, "actions": actionSubscribers.count, "analytics": analyticsSubscribers.count,
      "inspect": inspectWatchers.count,
    ]
  }

  var hasAnalyticsSubscribers: Bool { !analyticsSubscribers.isEmpty }

  /// Whether any analytics subscriber is replaying the history.
  var hasCatchingUp: Bool { analyticsSubscribers.values.contains { !$0.live } }

  private func makeID() -> String { ids.next() }

  /// Whether this daemon ever issued `id` (unsubscribing an issued id that is gone is fine; a never-issued one is an
  /// error: a typo, or an id from another daemon run).
  func isIssued(_ id: String) -> Bool { ids.isIssued(id) }

  /// A new `tips/observe` subscription; `initial` are the values the observe result gives the client.
  func observe(session: Session, tipIDs: Set<String>?, groups: Set<String>, initial: [TipState]) -> String {
    guard !session.isGone else { return makeID() }
    let observer = Observer(id: makeID(), session: session, tipIDs: tipIDs, groups: groups)
    for state in initial {
      observer.lastAnnounced[state.id] = state.shouldDisplay
      session.outbound.given(subscription: observer.id, tipID: state.id, shouldDisplay: state.shouldDisplay)
    }
    observers[observer.id] = observer
    session.subscriptions.insert(observer.id)
    return observer.id
  }

  /// A new `actions/subscribe` subscription.
  func subscribeActions(session: Session, tipIDs: Set<String>?) -> String {
    guard !session.isGone else { return makeID() }
    let subscriber = ActionSubscriber(id: makeID(), session: session, tipIDs: tipIDs)
    actionSubscribers[subscriber.id] = subscriber
    session.subscriptions.insert(subscriber.id)
    return subscriber.id
  }

  /// A new `analytics/subscribe` subscription: replaying from `after` (catching up), or live from now.
  func subscribeAnalytics(session: Session, after: Int64?, head: Int64) -> String {
    guard !session.isGone else { return makeID() }
    let subscriber = AnalyticsSubscriber(
      id: makeID(), session: session, delivered: after ?? head, live: after == nil)
    analyticsSubscribers[subscriber.id] = subscriber
    session.subscriptions.insert(subscriber.id)
    return subscriber.id
  }

  /// Hosted mode: a new analytics subscriber's replay was read from PostgreSQL; `stage` gets its notifications, then
  /// it is live.
  func replayed(
    _ id: String, events: [HistoryEvent], stage: (Session, StagedNotification) -> Void
  ) {
    guard let subscriber = analyticsSubscribers[id] else { return }
    for event in events where event.cursor > subscriber.delivered {
      let note = AnalyticsEventNotification(subscription: id, event: AnalyticsEventInfo(event))
      stage(subscriber.session, StagedNotification(notification: note, shouldDisplay: nil))
      subscriber.delivered = event.cursor
    }
    subscriber.live = true
  }

  /// Arms the connection's inspect watcher (made on first use); returns its subscription id.
  func watchInspect(session: Session) -> String {
    guard !session.isGone else { return makeID() }
    if let watcher = inspectWatchers[session.id] {
      watcher.armed = true
      return watcher.id
    }
    let watcher = InspectWatcher(id: makeID(), session: session)
    inspectWatchers[session.id] = watcher
    session.subscriptions.insert(watcher.id)
    return watcher.id
  }

  /// Ends `session`'s own subscription of that kind; false when it is gone or another connection's.
  func unsubscribe(_ id: String, kind: Kind, session: Session) -> Bool {
    let owner: Session? =
      switch kind {
      case .observe: observers[id]?.session
      case .actions: actionSubscribers[id]?.session
      case .analytics: analyticsSubscribers[id]?.session
      }
    guard owner === session else { return false }
    end(id, session: session)
    return true
  }

  /// Drops every subscription a connection that closed holds here — only those: an admin's session holds
  /// subscriptions in several accounts' registries, and each must drop its own (the registries hold their sessions
  /// unowned; one left behind would be read after the session is freed).
  func removeAll(of session: Session) {
    var mine: [String] = []
    for id in session.subscriptions
    where observers[id] != nil || actionSubscribers[id] != nil || analyticsSubscribers[id] != nil {
      mine.append(id)
    }
    for id in mine {
      observers[id] = nil
      actionSubscribers[id] = nil
      analyticsSubscribers[id] = nil
      session.subscriptions.remove(id)
    }
    if let watcher = inspectWatchers.removeValue(forKey: session.id) { session.subscriptions.remove(watcher.id) }
  }

  private func end(_ id: String, session: Session) {
    observers[id] = nil
    actionSubscribers[id] = nil
    analyticsSubscribers[id] = nil
    session.subscriptions.remove(id)
    session.outbound.subscriptionEnded(id)
  }

  // MARK: Notifications

  /// The notifications an engine mutation's changes cause: one `tips/shouldDisplayChanged` per observer of a tip
  /// whose value differs from the last one announced to it, one `groups/currentTipChanged` per observer of a group.
  func notifications(for changes: [Change], engine: Engine) -> [(Session, StagedNotification)] {
    guard !changes.isEmpty, !observers.isEmpty else { return [] }
    var out: [(Session, StagedNotification)] = []
    for change in changes {
      switch change {
      case .tip(let state):
        // Content is built once per locale among the subscribers.
        var contents: [String: TipContent] = [:]
        for observer in observers.values where observer.watches(tip: state.id) {
          guard observer.lastAnnounced[state.id] != state.shouldDisplay else { continue }
          observer.lastAnnounced[state.id] = state.shouldDisplay
          let locale = observer.session.locale
          let content =
            contents[locale ?? ""]
            ?? TipContent(engine.definition(of: state.id), id: state.id, locale: locale, variant: state.variant)
          contents[locale ?? ""] = content
          let note = ShouldDisplayChangedNotification(
            subscription: observer.id, id: state.id, shouldDisplay: state.shouldDisplay,
            status: StatusInfo(state.status), variant: state.variant, tip: content)
          out.append(
            (observer.session, StagedNotification(notification: note, shouldDisplay: (state.id, state.shouldDisplay))))
        }
      case .groupCurrentTip(let group, let tipID):
        for observer in observers.values where observer.groups.contains(group) {
          let note = CurrentTipChangedNotification(subscription: observer.id, group: group, tipID: tipID)
          out.append((observer.session, StagedNotification(notification: note, shouldDisplay: nil)))
        }
      }
    }
    return out
  }

  /// `analytics/event` for every live analytics subscriber, for each streamed entry (cursors assigned). Staged as
  /// requiring the commit: a failed commit drops them, so no client ever sees a cursor that was not stored.
  func analyticsNotifications(for events: ArraySlice<HistoryEvent>) -> [(Session, StagedNotification)] {
    guard !analyticsSubscribers.isEmpty else { return [] }
    var out: [(Session, StagedNotification)] = []
    for event in events where event.kind.isStreamed {
      for subscriber in analyticsSubscribers.values where subscriber.live {
        subscriber.delivered = event.cursor
        let note = AnalyticsEventNotification(subscription: subscriber.id, event: AnalyticsEventInfo(event))
        out.append(
          (subscriber.session, StagedNotification(notification: note, shouldDisplay: nil, requiresCommit: true)))
      }
    }
    return out
  }

  /// `inspect/changed` for every armed inspect watcher, disarming it.
  func inspectNotifications() -> [(Session, StagedNotification)] {
    var out: [(Session, StagedNotification)] = []
    for watcher in inspectWatchers.values where watcher.armed {
      watcher.armed = false
      out.append(
        (
          watcher.session,
          StagedNotification(notification: InspectChangedNotification(subscription: watcher.id), shouldDisplay: nil)
        ))
    }
    return out
  }

  /// `tips/actionPerformed` for every subscriber to the tip's actions: the performed action, always as an array,
  /// titled in the subscriber's locale.
  func actionNotifications(tip definition: TipDefinition, actionIndex index: Int) -> [(Session, StagedNotification)] {
    var out: [(Session, StagedNotification)] = []
    for subscriber in actionSubscribers.values where subscriber.tipIDs?.contains(definition.id) ?? true {
      let action = definition.localized(for: subscriber.session.locale).actions[index]
      let note = ActionPerformedNotification(
        subscription: subscriber.id, tipID: definition.id,
        actions: [ActionInfo(id: action.id, title: action.title, index: index)])
      out.append((subscriber.session, StagedNotification(notification: note, shouldDisplay: nil)))
    }
    return out
  }
}
