public import TipsJSON
// `Timestamp` and `ISO8601` live in TipsTime, the instants every layer shares; the engine's users get them with it.
@_exported public import TipsTime

/// Where the engine gets "now" from. Injected so that tests and `tipsd serve --clock virtual` control time.
public protocol EngineClock: AnyObject, Sendable {
  /// The current instant.
  func now() -> Timestamp
}

// MARK: - Tips

/// A tip's plain-data definition: what a frontend registers or a catalog declares.
///
/// Status and rules are keyed by ``id``: a renamed id is a brand-new tip with fresh state.
public struct TipDefinition: Sendable, Hashable {
  /// Stable identifier, e.g. `filter.tip`, `NewTrailTip-42` or `filter.tip.friendly` (an A/B variant).
  public var id: String
  public var title: String
  public var message: String?
  /// An image name the frontend resolves (e.g. an SF Symbol or an asset name).
  public var image: String?
  /// Ordered actions; on the wire every payload carries them as an array with their index.
  public var actions: [TipAction]
  /// All must hold (AND).
  public var rules: [Rule]
  public var options: TipOptions
  /// Copy per locale (`"ja"`, `"zh-Hans"`, `"pt-BR"`), chosen per client by ``localized(for:)``. Presentation only:
  /// status, rules and counts are shared by every locale.
  public var localizations: [String: TipLocalization]
  /// A/B copy variants, in declaration order: one rule tree, several copies (seed 000). Each install is assigned
  /// one (sticky); status, display count, duration and invalidation are per variant, events shared.
  public var variants: [TipVariant]
  /// How a frontend may present it (popover or inline, and where a popover's arrow points).
  public var presentation: TipPresentation?
  /// Free-form data handed to frontends untouched (hero images, analytics labels); at most 4 KiB of JSON.
  public var metadata: JSONObject?
  /// When and why this tip will be removed (the ship-day checklist's "removal path").
  public var removal: String?
  /// Whether its state syncs across a user's devices (the checklist's "local-only or synced, and why").
  public var sync: TipSync?
  /// What the tip is for: the event that shows it helped, and how soon after an impression it must be donated
  /// (seed 000's "feature-usage rate within 24 hours of a tip impression"). Read by the metrics only.
  public var goal: TipGoal?
  /// When the tip may show at all (`from` inclusive, `until` exclusive, UTC): outside it the tip is pending.
  public var schedule: TipSchedule?

  public init(
    id: String, title: String, message: String? = nil, image: String? = nil, actions: [TipAction] = [],
    rules: [Rule] = [], options: TipOptions = TipOptions(), localizations: [String: TipLocalization] = [:],
    variants: [TipVariant] = [], presentation: TipPresentation? = nil, metadata: JSONObject? = nil,
    removal: String? = nil, sync: TipSync? = nil, goal: TipGoal? = nil, schedule: TipSchedule? = nil
  ) {
    self.id = id
    self.title = title
    self.message = message
    self.image = image
    self.actions = actions
    self.rules = rules
    self.options = options
    self.localizations = localizations
    self.variants = variants
    self.presentation = presentation
    self.metadata = metadata
    self.removal = removal
    self.sync = sync
    self.goal = goal
    self.schedule = schedule
  }

  /// The variant named `name`, if the tip declares it.
  public func variant(_ name: String?) -> TipVariant? {
    guard let name else { return nil }
    return variants.first { $0.name == name }
  }

  /// This tip as a frontend draws it for `variant`: the variant's copy (and actions) over the tip's own. Copy the
  /// variant writes is translated by the variant's `localizations`; copy it inherits (the message, the actions,
  /// when it has none of its own) keeps the tip's translations. A holdout variant has no copy: the tip's own.
  public func withVariant(_ name: String?) -> TipDefinition {
    guard let variant = variant(name), !variant.holdout else { return self }
    var tip = self
    tip.title = variant.title
    if let message = variant.message { tip.message = message }
    if let actions = variant.actions { tip.actions = actions }
    var merged: [String: TipLocalization] = [:]
    for locale in Set(localizations.keys).union(variant.localizations.keys) {
      var entry = variant.localizations[locale] ?? TipLocalization()
      if let inherited = localizations[locale] {
        if variant.message == nil && entry.message == nil { entry.message = inherited.message }
        if variant.actions == nil {
          for (actionID, title) in inherited.actionTitles where entry.actionTitles[actionID] == nil {
            entry.actionTitles[actionID] = title
          }
        }
      }
      if entry != TipLocalization() { merged[locale] = entry }
    }
    tip.localizations = merged
    return tip
  }
}

/// `goal`: the event whose donation shows that a tip helped, and the window after an impression in which it counts
/// (`{"event": "filter.used", "within": {"hours": 24}}`; `within` defaults to 24 hours).
public struct TipGoal: Sendable, Hashable {
  public var eventID: String
  /// Seconds after an impression within which a donation of ``eventID`` counts as the tip's goal reached.
  public var within: Double

  /// The window when a goal names none: seed 000's 24 hours.
  public static let defaultWithin: Double = 86_400

  public init(eventID: String, within: Double = TipGoal.defaultWithin) {
    self.eventID = eventID
    self.within = within
  }
}

/// One A/B copy of a tip: its own title, message, actions and localizations; the tip's rules and events.
///
/// A *holdout* variant (`{"holdout": true}`) has no copy: installs assigned to it never see the tip, and the instant
/// the tip would have become displayable for them is recorded as a counterfactual exposure, so the metrics can
/// compare them with the exposed installs (the lift).
public struct TipVariant: Sendable, Hashable {
  public var name: String
  /// Empty for a holdout.
  public var title: String
  public var message: String?
  /// Replaces the tip's actions when given.
  public var actions: [TipAction]?
  public var localizations: [String: TipLocalization]
  /// Installs assigned to it never see the tip (see the type's notes).
  public var holdout: Bool
  /// Its share of installs relative to the other variants' weights; nil counts 1 (equal shares by default).
  public var weight: Double?

  public init(
    name: String, title: String, message: String? = nil, actions: [TipAction]? = nil,
    localizations: [String: TipLocalization] = [:], weight: Double? = nil
  ) {
    self.name = name
    self.title = title
    self.message = message
    self.actions = actions
    self.localizations = localizations
    self.holdout = false
    self.weight = weight
  }

  /// A holdout variant named `name`.
  public static func holdout(_ name: String, weight: Double? = nil) -> TipVariant {
    var variant = TipVariant(name: name, title: "", weight: weight)
    variant.holdout = true
    return variant
  }
}

/// `schedule`: the span of time in which a tip (or a group's tips) may show — `{"from": "2027-01-01T00:00:00Z",
/// "until": "2027-02-01T00:00:00Z"}`, either bound optional. `from` is inclusive, `until` exclusive; outside it a tip
/// is pending (not invalidated) and a group has no current tip. Counts are never reset by it.
public struct TipSchedule: Sendable, Hashable {
  public var from: Timestamp?
  public var until: Timestamp?

  public init(from: Timestamp? = nil, until: Timestamp? = nil) {
    self.from = from
    self.until = until
  }

  /// Whether `instant` is inside: `from <= instant < until`.
  public func contains(_ instant: Timestamp) -> Bool {
    (from.map { instant >= $0 } ?? true) && (until.map { instant < $0 } ?? true)
  }

  /// The next instant after `now` at which it opens or closes.
  public func nextBoundary(after now: Timestamp) -> Timestamp? {
    if let from, now < from { return from }
    if let until, now < until { return until }
    return nil
  }

  /// Whether no instant is inside (`until` at or before `from`).
  public var neverOpens: Bool {
    guard let from, let until else { return false }
    return until <= from
  }

  /// The instants both schedules contain, or nil when they share none.
  public func intersection(_ other: TipSchedule) -> TipSchedule? {
    let lower = [from, other.from].compactMap { $0 }.max()
    let upper = [until, other.until].compactMap { $0 }.min()
    let both = TipSchedule(from: lower, until: upper)
    return both.neverOpens ? nil : both
  }
}

/// `presentation`: TipKit's popover or inline `TipView`, and a popover's arrow edge.
public struct TipPresentation: Sendable, Hashable {
  public enum Style: String, Sendable, Hashable, CaseIterable { case popover, inline }
  public enum ArrowEdge: String, Sendable, Hashable, CaseIterable { case top, bottom, leading, trailing }
  public var style: Style
  public var arrowEdge: ArrowEdge?

  public init(style: Style, arrowEdge: ArrowEdge? = nil) {
    self.style = style
    self.arrowEdge = arrowEdge
  }
}

/// `sync`: whether a tip's state crosses a user's devices.
public enum TipSync: String, Sendable, Hashable, CaseIterable {
  /// This device only (a per-device tip).
  case local
  /// Synced with the account's other devices.
  case synced
}

/// A tip's copy in one locale; what it leaves out falls back to the tip's own copy.
public struct TipLocalization: Sendable, Hashable {
  public var title: String?
  public var message: String?
  /// Action titles by action id.
  public var actionTitles: [String: String]

  public init(title: String? = nil, message: String? = nil, actionTitles: [String: String] = [:]) {
    self.title = title
    self.message = message
    self.actionTitles = actionTitles
  }
}

extension TipDefinition {
  /// The locale key of ``localizations`` that best matches a client's locale (BCP 47, `_` or `-`): an exact match
  /// (case-insensitive), else the longest matching prefix (`zh-Hans-CN` → `zh-Hans` → `zh`); nil when none does.
  public func localizationKey(for locale: String?) -> String? {
    guard let locale, !localizations.isEmpty else { return nil }
    var parts = locale.replacingUnderscores().lowercased().split(separator: "-").map(String.init)
    while !parts.isEmpty {
      let candidate = parts.joined(separator: "-")
      if let key = localizations.keys.first(where: { $0.replacingUnderscores().lowercased() == candidate }) {
        return key
      }
      parts.removeLast()
    }
    return nil
  }

  /// This tip with its copy in the best-matching locale (see ``localizationKey(for:)``), or unchanged.
  public func localized(for locale: String?) -> TipDefinition {
    guard let key = localizationKey(for: locale), let copy = localizations[key] else { return self }
    var tip = self
    if let title = copy.title { tip.title = title }
    if let message = copy.message { tip.message = message }
    tip.actions = actions.map { action in
      var action = action
      if let title = copy.actionTitles[action.id] { action.title = title }
      return action
    }
    return tip
  }
}

extension String {
  fileprivate func replacingUnderscores() -> String {
    String(unicodeScalars.map { $0 == "_" ? "-" : Character($0) })
  }
}

/// A button on a tip. Ids are required on the wire (TipKit falls back to the index; we do not).
public struct TipAction: Sendable, Hashable {
  public var id: String
  public var title: String
  /// Whether performing it invalidates the tip (`actionPerformed`) unless `tips/performAction` says otherwise; the
  /// default, as seed 000 asks ("invalidate on every action button").
  public var invalidates: Bool
  public init(id: String, title: String, invalidates: Bool = true) {
    self.id = id
    self.title = title
    self.invalidates = invalidates
  }
}

/// TipKit's `options`.
public struct TipOptions: Sendable, Hashable {
  /// `MaxDisplayCount(n)`: after n recorded displays the tip becomes `invalidated(displayCountExceeded)`.
  public var maxDisplayCount: Int?
  /// `MaxDisplayDuration(seconds)`: cumulative displayed time; at the limit, `invalidated(displayDurationExceeded)`.
  public var maxDisplayDuration: Double?
  /// `IgnoresDisplayFrequency(true)`: not held back by the global display-frequency cooldown.
  public var ignoresDisplayFrequency: Bool

  public init(maxDisplayCount: Int? = nil, maxDisplayDuration: Double? = nil, ignoresDisplayFrequency: Bool = false) {
    self.maxDisplayCount = maxDisplayCount
    self.maxDisplayDuration = maxDisplayDuration
    self.ignoresDisplayFrequency = ignoresDisplayFrequency
  }
}

// MARK: - Rules

/// Comparison operators of rule JSON: `eq ne lt lte gt gte`.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
  case eq, ne, lt, lte, gt, gte
}

/// One eligibility rule. A tip's top-level rule list is an implicit `allOf`.
///
/// JSON shapes (exactly these keys):
/// - `{"event": "search.opened", "count": {"gte": 3}}`
/// - `{"event": "search.opened", "within": {"days": 1}, "count": {"gte": 1}}` (`minutes`, `hours`, `days`, `weeks`)
/// - `{"event": "trail.visited", "where": {"region": "north"}, "count": {"gt": 3}}`
/// - `{"event": "trail.visited", "largestGroupBy": "region", "count": {"gte": 2}}`
/// - `{"parameter": "isLoggedIn", "eq": true}`
/// - `{"tip": "welcome.tip", "status": "invalidated", "for": {"days": 1}}`, `{"tip": "welcome.tip", "displayed": {"gte": 2}}`
/// - `{"allOf": [...]}`, `{"anyOf": [...]}`, `{"not": {...}}`
public indirect enum Rule: Sendable, Hashable {
  case event(EventRule)
  case parameter(ParameterRule)
  /// A tip that follows another tip.
  case tip(TipRule)
  case allOf([Rule])
  case anyOf([Rule])
  case not(Rule)
}

/// A rule over an event's donations.
public struct EventRule: Sendable, Hashable {
  public var eventID: String
  /// Only donations with `now - donatedAt < within` count. Seconds.
  public var within: Double?
  /// Only donations whose associated values contain each of these key/value pairs (JSON equality) count.
  public var matching: JSONObject?
  /// Count only the largest group of donations sharing a value for this key (TipKit's `largestSubset(groupedBy:)`).
  /// Donations without the key are ignored; no group counts 0.
  public var largestGroupBy: String?
  public var countOperator: ComparisonOperator
  public var countValue: Int

  public init(
    eventID: String, within: Double? = nil, matching: JSONObject? = nil, largestGroupBy: String? = nil,
    countOperator: ComparisonOperator, countValue: Int
  ) {
    self.eventID = eventID
    self.within = within
    self.matching = matching
    self.largestGroupBy = largestGroupBy
    self.countOperator = countOperator
    self.countValue = countValue
  }
}

/// A rule comparing a parameter's current value with a constant.
/// A parameter that was never defined reads as `null`, so only `ne` can hold for it.
public struct ParameterRule: Sendable, Hashable {
  public var parameterID: String
  public var op: ComparisonOperator
  public var value: JSONValue

  public init(parameterID: String, op: ComparisonOperator, value: JSONValue) {
    self.parameterID = parameterID
    self.op = op
    self.value = value
  }
}

extension TipDefinition {
  /// The tips its rules follow (tip rules), each once, in order.
  public var followedTips: [String] {
    var targets: [String] = []
    for rule in rules { rule.forEachTipRule { if !targets.contains($0.tipID) { targets.append($0.tipID) } } }
    return targets
  }
}

extension Rule {
  /// Calls `body` with every tip rule in the tree.
  public func forEachTipRule(_ body: (TipRule) -> Void) {
    switch self {
    case .tip(let rule): body(rule)
    case .event, .parameter: break
    case .allOf(let rules), .anyOf(let rules): for rule in rules { rule.forEachTipRule(body) }
    case .not(let rule): rule.forEachTipRule(body)
    }
  }
}

/// A rule on another tip's state ("show the filter tip a day after the welcome tip was closed"). It reads the other
/// tip's record (its current variant's): a tip that is not registered never satisfies it. Tips that follow tips must
/// not form a cycle (refused at registration).
public struct TipRule: Sendable, Hashable {
  public enum Condition: Sendable, Hashable {
    /// Invalidated, and for at least this many seconds when given.
    case invalidated(for: Double?)
    /// Its display count compared with a constant.
    case displayed(ComparisonOperator, Int)
  }

  public var tipID: String
  public var condition: Condition

  public init(tipID: String, condition: Condition) {
    self.tipID = tipID
    self.condition = condition
  }

  /// Whether it holds for the other tip's record (nil: not registered) at `now`.
  public func holds(_ record: TipRecord?, now: Timestamp) -> Bool {
    guard let record else { return false }
    switch condition {
    case .invalidated(let duration):
      guard record.invalidationReason != nil else { return false }
      guard let duration else { return true }
      // The instant it elapses is `invalidatedAt + duration` (what the engine steps to): compare with that sum.
      return now >= (record.invalidatedAt ?? now) + duration
    case .displayed(let op, let count):
      return op.compare(record.displayCount, count)
    }
  }
}

// MARK: - Parameters, groups, frequency

/// A declared parameter: Bool, Int, Double or String, with a default.
public struct ParameterDefinition: Sendable, Hashable {
  public var id: String
  public var defaultValue: JSONValue
  /// Back to the default at every start; never persisted.
  public var transient: Bool

  public init(id: String, defaultValue: JSONValue, transient: Bool = false) {
    self.id = id
    self.defaultValue = defaultValue
    self.transient = transient
  }
}

/// TipKit's `TipGroup` priority.
public enum GroupPriority: String, Sendable, Hashable, CaseIterable {
  /// The current tip is the first non-invalidated tip, shown only when it is eligible.
  case ordered
  /// The current tip is the first eligible tip in declared order.
  case firstAvailable
}

/// An iOS 18 `TipGroup`: at most one of its tips is current at a time.
public struct TipGroupDefinition: Sendable, Hashable {
  public var id: String
  public var priority: GroupPriority
  public var tipIDs: [String]
  /// Outside it the group has no current tip, so none of its tips shows.
  public var schedule: TipSchedule?

  public init(id: String, priority: GroupPriority, tipIDs: [String], schedule: TipSchedule? = nil) {
    self.id = id
    self.priority = priority
    self.tipIDs = tipIDs
    self.schedule = schedule
  }
}

/// Global display frequency: no more than one new tip per period.
public enum DisplayFrequency: String, Sendable, Hashable, CaseIterable {
  case immediate, hourly, daily, weekly, monthly

  /// The cooldown in seconds (`monthly` is 30 days).
  public var period: Double {
    switch self {
    case .immediate: 0
    case .hourly: 3_600
    case .daily: 86_400
    case .weekly: 604_800
    case .monthly: 2_592_000
    }
  }
}

// MARK: - Status

/// Why a tip was invalidated. Invalidation is permanent until `resetEligibility` or a datastore reset.
public enum InvalidationReason: String, Sendable, Hashable, CaseIterable {
  case actionPerformed, tipClosed, displayCountExceeded, displayDurationExceeded
}

/// TipKit's `Tip.Status`.
public enum TipStatus: Sendable, Hashable {
  case pending
  case available
  case invalidated(InvalidationReason)
}

/// What a subscriber sees of a tip.
public struct TipState: Sendable, Hashable {
  public var id: String
  public var status: TipStatus
  /// True exactly when the tip is available and nothing (display frequency, a group, a testing override) holds it
  /// back.
  public var shouldDisplay: Bool
  /// The A/B variant this install sees, for a tip that declares variants.
  public var variant: String?

  public init(id: String, status: TipStatus, shouldDisplay: Bool, variant: String? = nil) {
    self.id = id
    self.status = status
    self.shouldDisplay = shouldDisplay
    self.variant = variant
  }
}

/// Testing overrides, TipKit's precedence: show these > hide these > show all > hide all.
public enum TestingOverride: Sendable, Hashable {
  case showAll
  case hideAll
  case show([String])
  case hide([String])
  /// Clears every override.
  case clear
}
