public import TipsJSON

// MARK: - Durable state
//
// Everything the datastore keeps is plain data defined here. Definitions (tips, groups, parameter declarations)
// are not durable: frontends and catalogs register them at every start, as TipKit's tips live in code.

/// One donation of an event.
public struct Donation: Sendable, Hashable {
  public var at: Timestamp
  /// Flat associated values (TipKit's `DonationInfo`), or nil.
  public var info: JSONObject?

  public init(at: Timestamp, info: JSONObject? = nil) {
    self.at = at
    self.info = info
  }
}

extension Donation {
  /// The order an event's donations are kept in: by time; for donations at the same instant, in the order they arrived
  /// unless `canonical` (``EngineConfiguration/canonicalDonationOrder``), then by their associated values' JSON with
  /// keys sorted (no values first) — the same order on every device whatever order they arrived in. Canonical
  /// donations neither precedes are identical in everything a rule reads.
  public static func precedes(_ a: Donation, _ b: Donation, canonical: Bool = true) -> Bool {
    if a.at != b.at { return a.at < b.at }
    guard canonical, a.info != b.info else { return false }
    return canonicalInfo(a.info).lexicographicallyPrecedes(canonicalInfo(b.info))
  }

  /// Associated values as JSON with their keys sorted (empty for none): a donation's tie-breaker.
  static func canonicalInfo(_ info: JSONObject?) -> [UInt8] {
    guard let info else { return [] }
    let sorted = info.members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    return JSONValue.object(JSONObject(sorted)).serialized()
  }
}

/// Per-tip durable record. `pending`/`available` are derived from rules; only invalidation is stored.
public struct TipRecord: Sendable, Hashable {
  public var invalidationReason: InvalidationReason?
  public var invalidatedAt: Timestamp?
  public var displayCount: Int
  /// Cumulative seconds displayed.
  public var displayedDuration: Double
  public var firstDisplayedAt: Timestamp?
  public var lastDisplayedAt: Timestamp?

  public init(
    invalidationReason: InvalidationReason? = nil, invalidatedAt: Timestamp? = nil, displayCount: Int = 0,
    displayedDuration: Double = 0, firstDisplayedAt: Timestamp? = nil, lastDisplayedAt: Timestamp? = nil
  ) {
    self.invalidationReason = invalidationReason
    self.invalidatedAt = invalidatedAt
    self.displayCount = displayCount
    self.displayedDuration = displayedDuration
    self.firstDisplayedAt = firstDisplayedAt
    self.lastDisplayedAt = lastDisplayedAt
  }

  /// True when the record holds nothing worth storing.
  public var isEmpty: Bool { self == TipRecord() }
}

/// `tips/suppress`: while it runs no tip is displayable (testing overrides excepted) — a checkout, a modal, a call in
/// progress (flutter_tipkit's `Tips.suppress`). It starts no cooldown and invalidates nothing; a new one replaces
/// the running one. Device-local: it is never synced.
public struct Suppression: Sendable, Hashable {
  /// When it started.
  public var since: Timestamp
  /// When it ends by itself (exclusive); nil: until `tips/resume`.
  public var until: Timestamp?
  /// Why, for people reading `explain` and the inspector.
  public var reason: String?

  public init(since: Timestamp, until: Timestamp? = nil, reason: String? = nil) {
    self.since = since
    self.until = until
    self.reason = reason
  }

  /// Whether it is in force at `now` (`now < until`).
  public func isActive(at now: Timestamp) -> Bool { until.map { now < $0 } ?? true }
}

/// Everything loaded from the datastore at start, handed to ``Engine/restore(_:)``.
public struct EngineSnapshot: Sendable, Equatable {
  /// Donations per event id, oldest first.
  public var donations: [String: [Donation]]
  /// Persisted (non-transient) parameter values.
  public var parameters: [String: JSONValue]
  public var tipRecords: [String: TipRecord]
  /// The instant the display-frequency cooldown started (the last display of a tip that does not ignore it).
  public var cooldownStartedAt: Timestamp?
  public var displayFrequency: DisplayFrequency
  /// Per-event cap on stored donations (newest kept); events not listed use the engine's default (1000).
  public var donationLimits: [String: Int]
  /// Donations ever per event (kept and dropped), listed only when more than the event keeps; an event not listed
  /// counts what it keeps.
  public var lifetimeCounts: [String: Int]
  /// The variant each tip with variants was assigned (sticky per install).
  public var variantAssignments: [String: String]
  /// The install id variants are assigned from.
  public var installID: String?
  /// Per-event maximum age of donations, seconds (iOS 26's `DonationLimit(maximumAge:)`).
  public var donationMaxAges: [String: Double]
  /// The suppression in force, if any.
  public var suppression: Suppression?
  /// Holdout records (`tipId\u{1F}variant`) whose tip would be displayable now, with the instant it became so (the
  /// counterfactual exposure in progress).
  public var exposures: [String: Timestamp]

  public init(
    donations: [String: [Donation]] = [:], parameters: [String: JSONValue] = [:],
    tipRecords: [String: TipRecord] = [:], cooldownStartedAt: Timestamp? = nil,
    displayFrequency: DisplayFrequency = .immediate, donationLimits: [String: Int] = [:],
    lifetimeCounts: [String: Int] = [:], variantAssignments: [String: String] = [:], installID: String? = nil,
    donationMaxAges: [String: Double] = [:], suppression: Suppression? = nil, exposures: [String: Timestamp] = [:]
  ) {
    self.donations = donations
    self.parameters = parameters
    self.tipRecords = tipRecords
    self.cooldownStartedAt = cooldownStartedAt
    self.displayFrequency = displayFrequency
    self.donationLimits = donationLimits
    self.lifetimeCounts = lifetimeCounts
    self.variantAssignments = variantAssignments
    self.installID = installID
    self.donationMaxAges = donationMaxAges
    self.suppression = suppression
    self.exposures = exposures
  }
}

/// A durable effect of a mutation, in order. The store applies a batch of these in one transaction; applying
/// every write an engine produced, in order, to an empty store and loading it reproduces the engine's durable
/// state.
public enum StateWrite: Sendable, Hashable {
  /// Append a donation (and count it in the event's lifetime count); then keep only the newest `keepNewest`
  /// donations of that event.
  case donation(eventID: String, Donation, keepNewest: Int)
  /// The variant a tip is assigned (nil: none any more).
  case variantAssignment(tipID: String, variant: String?)
  /// The install id variants are assigned from.
  case installID(String)
  /// A persisted parameter's new value.
  case parameter(id: String, value: JSONValue)
  /// Forget a parameter's stored value (it became transient, or was reset).
  case deleteParameter(id: String)
  /// Replace a tip's record (an empty record may be deleted).
  case tipRecord(id: String, TipRecord)
  /// The cooldown start instant (nil clears it).
  case cooldown(Timestamp?)
  case displayFrequency(DisplayFrequency)
  /// A new per-event donation cap; the store trims to it.
  case donationLimit(eventID: String, limit: Int)
  /// Clear everything (datastore reset).
  case reset
  /// Replace an event's stored donations (oldest first) and its lifetime count: after a donation was inserted before
  /// the newest (a clock that went back, or donations merged from another device).
  case donations(eventID: String, [Donation], lifetime: Int)
  /// An event's lifetime count (donations ever, kept and dropped), set by a merge from another device.
  case lifetime(eventID: String, Int)
  /// A new per-event maximum age of donations, seconds (nil: none).
  case donationMaxAge(eventID: String, seconds: Double?)
  /// Keep only the newest `keepNewest` donations of an event (the older ones aged out); its lifetime count stays.
  case trimDonations(eventID: String, keepNewest: Int)
  /// The suppression in force (nil: none).
  case suppression(Suppression?)
  /// A holdout's counterfactual exposure began at `since` (the tip would have become displayable), or ended (nil).
  case exposure(tipID: String, variant: String, since: Timestamp?)
}

extension StateWrite {
  /// A `.donation`'s event id and instant (nil for any other write): what the server's history reads of every
  /// donation.
  @inlinable
  public var donatedEvent: (eventID: String, at: Timestamp)? {
    guard case .donation(let eventID, let donation, _) = self else { return nil }
    return (eventID, donation.at)
  }
}

/// What a subscriber must be told after a mutation.
public enum Change: Sendable, Hashable {
  /// A tip's status or shouldDisplay changed (it is reported only when one of them differs from the last report).
  case tip(TipState)
  /// A group's current tip changed (nil: no current tip).
  case groupCurrentTip(groupID: String, tipID: String?)
}

/// The outcome of a mutation: the changes to notify and the writes to persist (before acknowledging).
public struct Mutation: Sendable, Hashable {
  public var changes: [Change]
  public var writes: [StateWrite]
  /// The instant its changes happened when that is not the clock's now: a time-driven change replayed by
  /// ``Engine/advanceTimeInSteps()`` at its own instant (a schedule boundary, a cooldown or suppression ending...),
  /// which history entries are stamped with. Nil: now.
  public var at: Timestamp?

  public init(changes: [Change] = [], writes: [StateWrite] = [], at: Timestamp? = nil) {
    self.changes = changes
    self.writes = writes
    self.at = at
  }

  public static let none = Mutation()
}
