public import TipsJSON

// Events: their donations, limits and ages, and what a donation re-evaluates.

extension Engine {
  // MARK: - Events

  /// iOS 26's `DonationLimit(maximumAge:)`: donations of the event at least `seconds` old are invisible to its rules
  /// (a plain count reads the younger ones, not the lifetime count) and are trimmed; nil removes the age limit (what
  /// was trimmed stays gone). The lifetime count `events/donate` reports still counts every donation.
  public func setDonationMaxAge(_ eventID: String, _ seconds: Double?) throws(EngineError) -> Mutation {
    guard !eventID.isEmpty else { throw .invalidArgument(argument: "id", problem: "must not be empty") }
    if let seconds, !(seconds.isFinite && seconds > 0) {
      throw .invalidArgument(argument: "maxAge", problem: "must be a positive duration")
    }
    let now = tick()
    let log = eventLog(eventID)
    guard log.maxAge != seconds else { return finish([]) }
    if log.maxAge == nil { agedLogs.append(log) }
    if seconds == nil { agedLogs.removeAll { $0 === log } }
    log.maxAge = seconds
    var writes: [StateWrite] = [.donationMaxAge(eventID: eventID, seconds: seconds)]
    if log.trimAged(now: now) { writes.append(.trimDonations(eventID: eventID, keepNewest: log.count)) }
    for (key, watch) in windows where key.event == log.number {
      watch.startSeq = log.windowStartSeq(within: key.within, now: now)
    }
    return finish(settle(rules: log.dependents, now: now), writes: writes)
  }

  /// An event's maximum donation age, seconds, when one is set.
  public func donationMaxAge(_ eventID: String) -> Double? { logs[eventID]?.maxAge }

  /// An event's own cap on kept donations, when one is set (else the engine's default applies).
  public func configuredDonationLimit(_ eventID: String) -> Int? { logs[eventID]?.limit }

  /// Caps the donations kept for an event (newest kept; at least 1).
  public func setDonationLimit(_ eventID: String, _ limit: Int) throws(EngineError) -> Mutation {
    guard !eventID.isEmpty else { throw .invalidArgument(argument: "id", problem: "must not be empty") }
    guard limit >= 1 else {
      throw .invalidArgument(argument: "maxDonations", problem: "must be at least 1 (got \(limit))")
    }
    let now = tick()
    let log = eventLog(eventID)
    guard log.limit != limit else { return finish([]) }
    log.limit = limit
    let dirty = log.trim(to: limit) ? log.dependents : []
    return finish(settle(rules: dirty, now: now), writes: [.donationLimit(eventID: eventID, limit: limit)])
  }

  /// Donates an event now. Returns the number of stored donations of the event after this one, and of donations
  /// ever (the lifetime count a plain `count` rule reads).
  ///
  /// The event id must not be empty; associated values must be flat (strings, numbers, booleans, null).
  public func donate(_ eventID: String, info: JSONObject? = nil) throws(EngineError)
    -> (count: Int, lifetime: Int, mutation: Mutation)
  {
    guard !eventID.isEmpty else { throw .invalidArgument(argument: "id", problem: "must not be empty") }
    if let info {
      for (key, value) in info {
        switch value {
        case .array:
          throw .invalidArgument(argument: "info.\(key)", problem: "associated values must be flat (no arrays)")
        case .object:
          throw .invalidArgument(argument: "info.\(key)", problem: "associated values must be flat (no objects)")
        default: continue
        }
      }
    }
    let now = tick()
    let log = eventLog(eventID)
    let limit = limit(of: log)
    let donation = Donation(at: now, info: info)
    var writes: [StateWrite] = [.donation(eventID: eventID, donation, keepNewest: limit)]
    var appended = log.append(donation, limit: limit, canonical: configuration.canonicalDonationOrder)
    if !appended {
      // Inserted before the newest (the clock went back, or another device's donations are newer): the store's rows
      // are rewritten in the log's order.
      writes.append(.donations(eventID: eventID, log.donations, lifetime: log.lifetime))
    }
    if log.maxAge != nil, log.trimAged(now: now) {
      writes.append(.trimDonations(eventID: eventID, keepNewest: log.count))
      appended = false
    }
    guard configuration.skipsSaturatedTips else {
      return (log.count, log.lifetime, finish(settle(rules: log.dependents, now: now), writes: writes, donation: true))
    }
    // Only the tips this donation can still change, while every cached evaluation is fresh (`Engine+Saturation`).
    let fresh = !timeWentBack && now < currentUntil
    let fromLive = fresh && appended && log.liveEpoch == liveEpoch
    let changes = settle(rules: fromLive ? log.live : log.dependents, now: now)
    updateLive(log, fromLive: fromLive, appended: appended, now: now)
    if fresh { currentUntil = min(currentUntil, now + log.minSpan) }
    return (log.count, log.lifetime, finish(changes, writes: writes, donation: true))
  }

  /// Stored donations of an event.
  public func donationCount(_ eventID: String) -> Int { logs[eventID]?.count ?? 0 }

  /// Stored donations of every event (counted, not copied: a hosted node checks its per-account budget on every
  /// donation).
  public var storedDonationCount: Int {
    assert(donationTally.stored == logList.reduce(0) { $0 + $1.count }, "the donation tally drifted from the logs")
    return donationTally.stored
  }

  /// Donations of an event over the app's life (since the last datastore reset).
  public func lifetimeCount(_ eventID: String) -> Int { logs[eventID]?.lifetime ?? 0 }

  /// The stored donations of an event, oldest first.
  public func donations(_ eventID: String) -> [Donation] { logs[eventID]?.donations ?? [] }
}
