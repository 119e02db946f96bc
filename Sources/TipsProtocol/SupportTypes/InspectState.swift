public import TipsEngine
public import TipsJSON

/// `InspectState`: everything an inspector shows — `inspect/state`'s result (`tipsd inspect`, `tipsd report`, the
/// web inspector at `GET /`), described member by member in protocol/openrpc.json.
public struct InspectState: Sendable, Hashable {
  /// A tip's state with its explanation (as `tips/explain` gives it), display instants, variants and goal.
  public struct Tip: Sendable, Hashable {
    public var state: TipStateInfo
    /// Each rule with its current value (`RuleExplanation` objects, as the engine writes them).
    public var rules: [JSONValue]
    public var heldBy: [Hold]
    public var nextChangeAt: Double?
    /// `show`, `showAll`, `hide` or `hideAll` when a testing override applies.
    public var override: String?
    /// The explanation for people.
    public var lines: [String]
    public var firstDisplayedAt: Double?
    public var lastDisplayedAt: Double?
    public var variants: [String]
    public var goal: TipGoal?
    /// This install is held out of the tip (its variant is a holdout).
    public var holdout: Bool
    /// When the tip may show.
    public var schedule: TipSchedule?

    public init(
      state: TipStateInfo, rules: [JSONValue], heldBy: [Hold], nextChangeAt: Double?, override: String?,
      lines: [String], firstDisplayedAt: Double?, lastDisplayedAt: Double?, variants: [String], goal: TipGoal?,
      holdout: Bool = false, schedule: TipSchedule? = nil
    ) {
      self.state = state
      self.rules = rules
      self.heldBy = heldBy
      self.nextChangeAt = nextChangeAt
      self.override = override
      self.lines = lines
      self.firstDisplayedAt = firstDisplayedAt
      self.lastDisplayedAt = lastDisplayedAt
      self.variants = variants
      self.goal = goal
      self.holdout = holdout
      self.schedule = schedule
    }
  }

  /// What holds a tip back (`HeldBy`).
  public enum Hold: Sendable, Hashable {
    /// The display frequency's cooldown, until an instant.
    case cooldown(until: Double)
    /// A group whose current tip is another (or none).
    case group(String, currentTip: String?)
    /// A testing override (`hide`, `hideAll`).
    case override(String)
    /// Invalidated, for a reason.
    case invalidated(reason: String)
    /// The tip's schedule (or with `group`, its group's) is closed now.
    case schedule(from: Double?, until: Double?, group: String?)
    /// `tips/suppress` is in force (`until` nil: until `tips/resume`).
    case suppressed(until: Double?, reason: String?)
    /// This install is held out of the tip (a holdout variant); `exposedSince`: when its counterfactual exposure
    /// began, while the tip would be displayable.
    case holdout(variant: String, exposedSince: Double?)
  }

  /// An event with its counts, last donation and role.
  public struct Event: Sendable, Hashable {
    public var id: String
    public var count: Int
    public var lifetime: Int
    /// The last donation's instant and info.
    public var lastDonation: (at: Double, info: JSONObject?)?
    public var maxDonations: Int?
    /// The maximum donation age in seconds (`events/configure`'s `maxAge`).
    public var maxAge: Double?
    /// The tips whose goal it is.
    public var goalOf: [String]
    /// Whether it is the `--app-closed-event`.
    public var appClosed: Bool

    public init(
      id: String, count: Int, lifetime: Int, lastDonation: (at: Double, info: JSONObject?)?, maxDonations: Int?,
      maxAge: Double? = nil, goalOf: [String], appClosed: Bool
    ) {
      self.id = id
      self.count = count
      self.lifetime = lifetime
      self.lastDonation = lastDonation
      self.maxDonations = maxDonations
      self.maxAge = maxAge
      self.goalOf = goalOf
      self.appClosed = appClosed
    }

    public static func == (a: Event, b: Event) -> Bool {
      a.id == b.id && a.count == b.count && a.lifetime == b.lifetime && a.lastDonation?.at == b.lastDonation?.at
        && a.lastDonation?.info == b.lastDonation?.info && a.maxDonations == b.maxDonations && a.maxAge == b.maxAge
        && a.goalOf == b.goalOf && a.appClosed == b.appClosed
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
  }

  public struct Parameter: Sendable, Hashable {
    public var id: String
    public var value: JSONValue
    public var defaultValue: JSONValue
    public var transient: Bool

    public init(id: String, value: JSONValue, defaultValue: JSONValue, transient: Bool) {
      self.id = id
      self.value = value
      self.defaultValue = defaultValue
      self.transient = transient
    }
  }

  public struct Group: Sendable, Hashable {
    public var id: String
    public var priority: String
    public var tips: [String]
    public var currentTip: String?
    /// When the group's tips may show.
    public var schedule: TipSchedule?

    public init(id: String, priority: String, tips: [String], currentTip: String?, schedule: TipSchedule? = nil) {
      self.id = id
      self.priority = priority
      self.tips = tips
      self.currentTip = currentTip
      self.schedule = schedule
    }
  }

  /// The testing overrides in force.
  public struct Overrides: Sendable, Hashable {
    public var showAll: Bool
    public var hideAll: Bool
    public var show: [String]
    public var hide: [String]

    public init(showAll: Bool, hideAll: Bool, show: [String], hide: [String]) {
      self.showAll = showAll
      self.hideAll = hideAll
      self.show = show
      self.hide = hide
    }
  }

  /// The lifecycle history's settings and cursors.
  public struct History: Sendable, Hashable {
    public var enabled: Bool
    public var days: Double
    public var head: Int64
    public var oldest: Int64?
    public var appClosedEvent: String?

    public init(enabled: Bool, days: Double, head: Int64, oldest: Int64?, appClosedEvent: String?) {
      self.enabled = enabled
      self.days = days
      self.head = head
      self.oldest = oldest
      self.appClosedEvent = appClosedEvent
    }
  }

  public var now: Double
  public var virtualClock: Bool
  /// The daemon runs with `--allow-testing`.
  public var testing: Bool
  public var displayFrequency: DisplayFrequency
  public var tips: [Tip]
  public var events: [Event]
  public var parameters: [Parameter]
  public var groups: [Group]
  public var overrides: Overrides
  public var history: History
  /// The suppression in force (`tips/suppress`), if any.
  public var suppression: Suppression?
  /// With `watch: true`: the subscription the next `inspect/changed` is sent for.
  public var subscription: String?

  public init(
    now: Double, virtualClock: Bool, testing: Bool, displayFrequency: DisplayFrequency, tips: [Tip], events: [Event],
    parameters: [Parameter], groups: [Group], overrides: Overrides, history: History, suppression: Suppression? = nil,
    subscription: String? = nil
  ) {
    self.now = now
    self.virtualClock = virtualClock
    self.testing = testing
    self.displayFrequency = displayFrequency
    self.tips = tips
    self.events = events
    self.parameters = parameters
    self.groups = groups
    self.overrides = overrides
    self.history = history
    self.suppression = suppression
    self.subscription = subscription
  }
}

// MARK: - Writing

extension InspectState.Hold {
  public var json: JSONValue {
    switch self {
    case .cooldown(let until): ["kind": "cooldown", "until": .double(until)]
    case .group(let group, let current): ["kind": "group", "group": .string(group), "currentTip": optional(current)]
    case .override(let name): ["kind": "override", "override": .string(name)]
    case .invalidated(let reason): ["kind": "invalidated", "reason": .string(reason)]
    case .schedule(let from, let until, let group):
      group.map { ["kind": "schedule", "from": optional(from), "until": optional(until), "group": .string($0)] }
        ?? ["kind": "schedule", "from": optional(from), "until": optional(until)]
    case .suppressed(let until, let reason):
      ["kind": "suppressed", "until": optional(until), "reason": optional(reason)]
    case .holdout(let variant, let since):
      ["kind": "holdout", "variant": .string(variant), "exposedSince": optional(since)]
    }
  }
}

private func optional(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
private func optional(_ number: Double?) -> JSONValue { number.map { .double($0) } ?? .null }
private func strings(_ texts: [String]) -> JSONValue { .array(texts.map { .string($0) }) }

extension InspectState.Tip {
  public var json: JSONValue {
    var tip = state.json.objectValue ?? [:]
    tip["rules"] = .array(rules)
    tip["heldBy"] = .array(heldBy.map(\.json))
    tip["nextChangeAt"] = optional(nextChangeAt)
    if let override { tip["override"] = .string(override) }
    tip["lines"] = strings(lines)
    tip["firstDisplayedAt"] = optional(firstDisplayedAt)
    tip["lastDisplayedAt"] = optional(lastDisplayedAt)
    tip["variants"] = strings(variants)
    tip["goal"] = goal?.json ?? .null
    tip["holdout"] = .bool(holdout)
    tip["schedule"] = schedule?.json ?? .null
    return .object(tip)
  }
}

extension InspectState.Event {
  public var json: JSONValue {
    var event: JSONObject = ["id": .string(id), "count": .int(Int64(count)), "lifetime": .int(Int64(lifetime))]
    if let lastDonation {
      var donation: JSONObject = ["at": .double(lastDonation.at)]
      if let info = lastDonation.info { donation["info"] = .object(info) }
      event["lastDonation"] = .object(donation)
    } else {
      event["lastDonation"] = .null
    }
    event["maxDonations"] = maxDonations.map { .int(Int64($0)) } ?? .null
    event["maxAge"] = maxAge.map(EventRule.durationJSON) ?? .null
    event["goalOf"] = strings(goalOf)
    event["appClosed"] = .bool(appClosed)
    return .object(event)
  }
}

extension InspectState {
  /// The `InspectState` object.
  public var json: JSONValue {
    var object: JSONObject = [
      "now": .double(now),
      "virtualClock": .bool(virtualClock),
      "testing": .bool(testing),
      "displayFrequency": .string(displayFrequency.rawValue),
      "tips": .array(tips.map(\.json)),
      "events": .array(events.map(\.json)),
      "parameters": .array(
        parameters.map {
          ["id": .string($0.id), "value": $0.value, "default": $0.defaultValue, "transient": .bool($0.transient)]
        }),
      "groups": .array(
        groups.map {
          [
            "id": .string($0.id), "priority": .string($0.priority), "tips": strings($0.tips),
            "currentTip": optional($0.currentTip), "schedule": $0.schedule?.json ?? .null,
          ]
        }),
      "overrides": [
        "showAll": .bool(overrides.showAll), "hideAll": .bool(overrides.hideAll), "show": strings(overrides.show),
        "hide": strings(overrides.hide),
      ],
      "history": [
        "enabled": .bool(history.enabled), "days": .double(history.days), "head": .int(history.head),
        "oldest": history.oldest.map { .int($0) } ?? .null, "appClosedEvent": optional(history.appClosedEvent),
      ],
      "suppression": SuppressionResult(suppression).json,
    ]
    if let subscription { object["subscription"] = .string(subscription) }
    return .object(object)
  }
}

// MARK: - Reading

extension InspectState.Hold: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    switch try r.string("kind") {
    case "cooldown": self = .cooldown(until: try r.double("until"))
    case "group": self = .group(try r.string("group"), currentTip: try r.optionalString("currentTip"))
    case "override": self = .override(try r.string("override"))
    case "invalidated": self = .invalidated(reason: try r.string("reason"))
    case "schedule":
      self = .schedule(
        from: try r.optionalDouble("from"), until: try r.optionalDouble("until"), group: try r.optionalString("group"))
    case "suppressed": self = .suppressed(until: try r.optionalDouble("until"), reason: try r.optionalString("reason"))
    case "holdout":
      self = .holdout(variant: try r.string("variant"), exposedSince: try r.optionalDouble("exposedSince"))
    case let other:
      throw r.invalid(
        "kind", "is not cooldown, group, override, invalidated, schedule, suppressed or holdout (got \"\(other)\")")
    }
  }
}

extension InspectState.Tip: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      state: try TipStateInfo(from: r), rules: try r.array("rules"),
      heldBy: try r.decodeArray("heldBy", of: InspectState.Hold.self),
      nextChangeAt: try r.optionalDouble("nextChangeAt"),
      override: try r.optionalString("override"), lines: try r.strings("lines"),
      firstDisplayedAt: try r.optionalDouble("firstDisplayedAt"),
      lastDisplayedAt: try r.optionalDouble("lastDisplayedAt"),
      variants: try r.strings("variants"), goal: try TipGoal.optional("goal", in: r),
      holdout: try r.optionalValue("holdout")?.boolValue ?? false, schedule: try readSchedule("schedule", in: r))
  }
}

extension InspectState.Event: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    var lastDonation: (at: Double, info: JSONObject?)?
    if let donation = try r.optionalNested("lastDonation") {
      lastDonation = (try donation.double("at"), try donation.optionalNested("info")?.object)
    }
    self.init(
      id: try r.string("id"), count: try r.int("count"), lifetime: try r.int("lifetime"), lastDonation: lastDonation,
      maxDonations: try r.optionalInt("maxDonations"), maxAge: try readDuration("maxAge", in: r),
      goalOf: try r.strings("goalOf"),
      appClosed: try r.bool("appClosed"))
  }
}

extension InspectState.Parameter: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      id: try r.string("id"), value: try r.value("value"), defaultValue: try r.value("default"),
      transient: try r.bool("transient"))
  }
}

extension InspectState.Group: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      id: try r.string("id"), priority: try r.string("priority"), tips: try r.strings("tips"),
      currentTip: try r.optionalString("currentTip"), schedule: try readSchedule("schedule", in: r))
  }
}

extension InspectState.Overrides: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      showAll: try r.bool("showAll"), hideAll: try r.bool("hideAll"), show: try r.strings("show"),
      hide: try r.strings("hide"))
  }
}

extension InspectState.History: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      enabled: try r.bool("enabled"), days: try r.double("days"), head: try r.int64("head"),
      oldest: try r.optionalInt64("oldest"), appClosedEvent: try r.optionalString("appClosedEvent"))
  }
}

extension InspectState: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      now: try r.double("now"), virtualClock: try r.bool("virtualClock"), testing: try r.bool("testing"),
      displayFrequency: try r.enumeration("displayFrequency", DisplayFrequency.self),
      tips: try r.decodeArray("tips", of: Tip.self), events: try r.decodeArray("events", of: Event.self),
      parameters: try r.decodeArray("parameters", of: Parameter.self),
      groups: try r.decodeArray("groups", of: Group.self),
      overrides: try r.decode("overrides", as: Overrides.self), history: try r.decode("history", as: History.self),
      suppression: try readSuppression(in: r), subscription: try r.optionalString("subscription"))
  }
}

/// An optional `Schedule` member (absent or null: none).
private func readSchedule(_ key: String, in r: ResultReader) throws(ResultDecodingError) -> TipSchedule? {
  guard let value = r.optionalValue(key), value != .null else { return nil }
  do {
    return try TipSchedule(json: value, path: key)
  } catch {
    throw r.invalid(key, "is not a schedule: \(error)")
  }
}

/// An optional `Duration` member, in seconds (absent or null: none).
private func readDuration(_ key: String, in r: ResultReader) throws(ResultDecodingError) -> Double? {
  guard let value = r.optionalValue(key), value != .null else { return nil }
  do {
    return try EventRule.duration(value, key)
  } catch {
    throw r.invalid(key, "is not a duration: \(error)")
  }
}

/// The `suppression` member (absent, or `suppressed: false`: none).
private func readSuppression(in r: ResultReader) throws(ResultDecodingError) -> Suppression? {
  guard let nested = try r.optionalNested("suppression") else { return nil }
  return try SuppressionResult(from: nested).suppression
}
