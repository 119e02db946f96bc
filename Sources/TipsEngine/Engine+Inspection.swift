public import TipsJSON

// MARK: - Read-only views for inspectors (`inspect/state`, `tipsd inspect`, the web inspector)

/// One event as an inspector shows it: its donations kept and ever, and the newest one.
public struct EventSummary: Sendable, Hashable {
  public var id: String
  /// Donations kept (the newest `maxDonations`).
  public var count: Int
  /// Donations ever (since the last datastore reset).
  public var lifetime: Int
  /// The newest donation, if any is kept.
  public var lastDonation: Donation?
  /// The event's own cap on kept donations, when configured.
  public var maxDonations: Int?
  /// The event's maximum donation age, seconds, when configured.
  public var maxAge: Double?

  public init(
    id: String, count: Int, lifetime: Int, lastDonation: Donation?, maxDonations: Int?, maxAge: Double? = nil
  ) {
    self.id = id
    self.count = count
    self.lifetime = lifetime
    self.lastDonation = lastDonation
    self.maxDonations = maxDonations
    self.maxAge = maxAge
  }
}

/// One declared parameter: its value now and its declaration.
public struct ParameterSummary: Sendable, Hashable {
  public var id: String
  public var value: JSONValue
  public var defaultValue: JSONValue
  public var transient: Bool
}

/// The testing overrides in force.
public struct OverrideSummary: Sendable, Hashable {
  public var showAll: Bool
  public var hideAll: Bool
  /// Sorted.
  public var show: [String]
  /// Sorted.
  public var hide: [String]

  public var isEmpty: Bool { !showAll && !hideAll && show.isEmpty && hide.isEmpty }
}

extension Engine {
  /// Every event the engine knows (donated, or read by a registered tip's rules), sorted by id.
  public var eventSummaries: [EventSummary] {
    logList.sorted { $0.id < $1.id }.map { log in
      EventSummary(
        id: log.id, count: log.count, lifetime: log.lifetime, lastDonation: log.count > 0 ? log[log.count - 1] : nil,
        maxDonations: log.limit, maxAge: log.maxAge)
    }
  }

  /// Every declared parameter, sorted by id.
  public var parameterSummaries: [ParameterSummary] {
    parameters.values.compactMap { slot -> ParameterSummary? in
      guard let definition = slot.definition else { return nil }
      return ParameterSummary(
        id: slot.id, value: slot.value, defaultValue: definition.defaultValue, transient: definition.transient)
    }.sorted { $0.id < $1.id }
  }

  /// The testing overrides in force.
  public var overrideSummary: OverrideSummary {
    OverrideSummary(showAll: showAll, hideAll: hideAll, show: showIDs.sorted(), hide: hideIDs.sorted())
  }
}
