// MARK: - Lifecycle history
//
// What happened to tips, as the server saw it (impressions, eligibility changes, invalidations, actions, variant
// assignments) and the donations the metrics need (goal and app-closed events). Plain data: the server derives it
// from requests and engine mutations, the store keeps it (in the same transaction as the mutation's writes), the
// analytics stream sends it and the metrics read it. The engine itself neither produces nor reads it.

/// One entry of the lifecycle history.
///
/// `cursor` numbers entries in the order they happened, from 1, never reused (pruning keeps the newest entry, a
/// datastore reset does not touch the history); within one instant the cursor orders them.
public struct HistoryEvent: Sendable, Hashable {
  /// What an entry records. The raw values are the analytics stream's `type` names (stable).
  public enum Kind: String, Sendable, Hashable, CaseIterable {
    /// `tips/displayed`: `at` is the call's instant, `duration` the seconds it reported.
    case impression
    /// The tip's `status` or `shouldDisplay` changed (`status`, `reason` when invalidated, `shouldDisplay`).
    case eligibility
    /// The tip was invalidated (`reason`); followed by the eligibility change it causes.
    case invalidation
    /// `tips/performAction` (`actionId`, `actionIndex`).
    case action
    /// The tip was assigned an A/B variant (`variant`).
    case variant
    /// A donation of a tip's goal event or of the app-closed event (`event`); kept for the metrics, not streamed.
    case donation
    /// A holdout's counterfactual impression: the instant the tip would have become displayable for an install held
    /// out of it (`variant`: the holdout). The metrics read it as the holdout's impression.
    case exposure

    /// The integer the datastore stores.
    public var code: Int {
      switch self {
      case .impression: 1
      case .eligibility: 2
      case .invalidation: 3
      case .action: 4
      case .variant: 5
      case .donation: 6
      // 7 is the history codec's run tag.
      case .exposure: 8
      }
    }

    public init?(code: Int) {
      guard let kind = Kind.allCases.first(where: { $0.code == code }) else { return nil }
      self = kind
    }

    /// Whether the analytics stream (and `analytics/read`) carries it: every kind but `donation`.
    public var isStreamed: Bool { self != .donation }
  }

  /// Position in the history (0 until the server assigns it).
  public var cursor: Int64
  public var kind: Kind
  public var at: Timestamp
  /// The tip (nil for a donation).
  public var tipID: String?
  /// The donated event (donations only).
  public var eventID: String?
  /// The tip's A/B variant at the time (nil for a tip without variants).
  public var variant: String?
  /// Impressions: the seconds displayed, as reported.
  public var duration: Double?
  /// Actions: the action's id and its index in the tip's (variant's) actions.
  public var actionID: String?
  public var actionIndex: Int?
  /// Invalidations, and eligibility changes to `invalidated`: the reason.
  public var reason: String?
  /// Eligibility changes: the new status (`pending`, `available`, `invalidated`) and `shouldDisplay`.
  public var status: String?
  public var shouldDisplay: Bool?

  public init(
    cursor: Int64 = 0, kind: Kind, at: Timestamp, tipID: String? = nil, eventID: String? = nil, variant: String? = nil,
    duration: Double? = nil, actionID: String? = nil, actionIndex: Int? = nil, reason: String? = nil,
    status: String? = nil, shouldDisplay: Bool? = nil
  ) {
    self.cursor = cursor
    self.kind = kind
    self.at = at
    self.tipID = tipID
    self.eventID = eventID
    self.variant = variant
    self.duration = duration
    self.actionID = actionID
    self.actionIndex = actionIndex
    self.reason = reason
    self.status = status
    self.shouldDisplay = shouldDisplay
  }

  public static func impression(tip: String, variant: String?, at: Timestamp, duration: Double) -> HistoryEvent {
    HistoryEvent(kind: .impression, at: at, tipID: tip, variant: variant, duration: duration)
  }

  public static func action(tip: String, variant: String?, at: Timestamp, id: String, index: Int) -> HistoryEvent {
    HistoryEvent(kind: .action, at: at, tipID: tip, variant: variant, actionID: id, actionIndex: index)
  }

  public static func donation(event: String, at: Timestamp) -> HistoryEvent {
    HistoryEvent(kind: .donation, at: at, eventID: event)
  }

  public static func exposure(tip: String, variant: String, at: Timestamp) -> HistoryEvent {
    HistoryEvent(kind: .exposure, at: at, tipID: tip, variant: variant)
  }
}

/// The eligibility last recorded for a tip: what the next change is compared with (kept in the datastore, so a
/// restart that finds a tip as it left it records nothing).
public struct RecordedTipState: Sendable, Hashable {
  public var status: String
  public var reason: String?
  public var shouldDisplay: Bool
  public var variant: String?

  public init(status: String, reason: String?, shouldDisplay: Bool, variant: String?) {
    self.status = status
    self.reason = reason
    self.shouldDisplay = shouldDisplay
    self.variant = variant
  }

  public init(_ state: TipState) {
    self.init(
      status: state.status.name, reason: state.status.reason?.rawValue, shouldDisplay: state.shouldDisplay,
      variant: state.variant)
  }
}
