public import TipsEngine

// Seed 000's three metrics, and its "Next Step" question, computed from the lifecycle history: pure functions of
// the history, the tips' goals, the configuration and the period, tested against hand-worked histories.
//
// Order is the history's: an entry happened after another when its cursor is larger (so a goal donated in the same
// instant as an impression, but after it, follows it); durations are differences of `at`.

/// What the metrics read besides the history.
public struct MetricsConfiguration: Sendable, Hashable {
  /// The event the app donates when it goes to the background (`--app-closed-event`); nil: no close rate.
  public var appClosedEvent: String?
  /// Seconds after an impression within which an app close counts against it (`--close-window`, default 10).
  public var closeWindow: Double
  /// A close rate above this is flagged (`--close-rate-alert`); nil: never flagged.
  public var closeRateAlert: Double?
  /// Days before and after a tip's first impression whose goal donations are compared (`--baseline-days`, 7); also
  /// CUPED's pre-exposure window.
  public var baselineDays: Double
  /// How intervals are computed across accounts (minimum sample, the confidence sequence's tuning, CUPED).
  public var statistics: StatisticsOptions

  public init(
    appClosedEvent: String? = nil, closeWindow: Double = 10, closeRateAlert: Double? = nil, baselineDays: Double = 7,
    statistics: StatisticsOptions = StatisticsOptions()
  ) {
    self.appClosedEvent = appClosedEvent
    self.closeWindow = closeWindow
    self.closeRateAlert = closeRateAlert
    self.baselineDays = baselineDays
    self.statistics = statistics
  }
}

/// The computation. Definitions (docs/metrics.md, "Measuring whether a tip helped", says the same):
///
/// - **Impressions** are `tips/displayed` calls whose instant is in the period (`since` ≤ at < `until`).
/// - **(1) Goal conversion, last touch.** An impression converts when the first donation of the goal event after it
///   comes before the tip's next impression and at most `within` seconds after it. So each goal donation credits at
///   most one impression, the latest before it: two impressions then one goal count one conversion out of two. A goal
///   donated before the impression does not count. An impression whose window is still open, with no goal and no
///   later impression yet, is *pending* and left out of the rate.
/// - **(2) Time to first use** (`timeToGoal`), the reference's definition: per install (the history is one install's:
///   one datastore, or one account when synced), the first goal donation after the tip's first impression minus that
///   first impression — one sample, counted when the first impression is in the period; *open* when no goal followed
///   it yet. The median across installs is the hosted fleet's to take (here n is 0 or 1). Per variant, the first
///   impression of that variant. **Per exposure** (`timeToGoalPerExposure`): an exposure starts at an impression with no
///   impression of the tip since the last goal donation (the first one ever, or the first after a goal) and ends at
///   the first goal donation after it; the median of those durations, the mean of the two middle ones for an even
///   count; counted when the exposure starts in the period.
/// - **(3) Close rate.** An impression is followed by a close when the first app-closed donation after it comes at
///   most `closeWindow` seconds after it, before any action of the tip and before the tip's next impression (an
///   action in between means the user engaged: not a close). Pending as in (1). Flagged above `closeRateAlert`.
/// - **(4) Goal rate before and after.** From the tip's first impression in the history (up to `until`, ignoring
///   `since`): goal donations per day in the `baselineDays` before it (cut at the start of the kept history) against
///   the `baselineDays` after it (cut at `until` or now); a span shorter than a day has no rate.
/// - **Holdouts.** A holdout variant's impressions are its counterfactual ones (`exposure` entries: the instants the
///   tip would have become displayable); its goal conversion and time to first use are computed from them exactly as
///   for real impressions (no close rate, no before/after). The overall set counts real impressions only.
/// - **Triggered accounts** (issue #46, ``AccountConversion``): per set, the account's first trigger — a variant's
///   first `eligibility` entry with `shouldDisplay: true` (drawn or not), a holdout's first `exposure` — in the period,
///   converted when the first goal donation after it comes within the goal's window, pending while the window is
///   open. **Lift** and comparisons (``TipMetrics/compare(options:)``) compare these, the per-impression rates
///   second.
/// - **Statistics** (issue #38, docs/measuring.md): the account is the unit. Each set carries this account's
///   ``AccountSample`` (its decided and converted impressions, and CUPED's covariate: its goal donations in the
///   `baselineDays` before the set's first impression); intervals need ``StatisticsOptions/minimumAccounts``
///   accounts, so one install's report has none — ``FleetMetrics`` pools the samples of many.
///
/// Per variant, impressions are grouped by the variant they showed; "the tip's next impression" is the next one of
/// any variant, and an exposure belongs to the variant of its first impression.
public enum Metrics {
  public static func compute(
    history: [HistoryEvent], tips: [MetricsTip], configuration: MetricsConfiguration, since: Timestamp? = nil,
    until: Timestamp? = nil, now: Timestamp, historyStart: Timestamp? = nil
  ) -> MetricsReport {
    let ordered = history.sorted { $0.cursor < $1.cursor }
    var donations: [String: [HistoryEvent]] = [:]
    var impressions: [String: [HistoryEvent]] = [:]
    var counterfactuals: [String: [HistoryEvent]] = [:]
    var actions: [String: [HistoryEvent]] = [:]
    var triggers: [String: [HistoryEvent]] = [:]
    for event in ordered {
      switch event.kind {
      case .donation: if let id = event.eventID { donations[id, default: []].append(event) }
      case .impression: if let id = event.tipID { impressions[id, default: []].append(event) }
      case .exposure: if let id = event.tipID { counterfactuals[id, default: []].append(event) }
      case .action: if let id = event.tipID { actions[id, default: []].append(event) }
      case .eligibility:
        if event.shouldDisplay == true, let id = event.tipID { triggers[id, default: []].append(event) }
      default: break
      }
    }
    let closes = configuration.appClosedEvent.map { donations[$0] ?? [] }
    let context = Context(
      configuration: configuration, since: since, until: until, now: now,
      end: min(until ?? now, now), historyStart: historyStart)
    var report = MetricsReport(
      now: now, since: since, until: until, configuration: configuration, historyStart: historyStart, tips: [])
    for tip in tips {
      let goals = tip.goal.map { donations[$0.eventID] ?? [] }
      let real = impressions[tip.id] ?? []
      let outcomes = context.outcomes(
        impressions: real, actions: actions[tip.id] ?? [], goals: goals, goal: tip.goal, closes: closes)
      let held = counterfactuals[tip.id] ?? []
      let heldOutcomes = context.outcomes(impressions: held, actions: [], goals: goals, goal: tip.goal, closes: nil)
      var holdouts = tip.holdouts
      for exposure in held { if let name = exposure.variant { holdouts.insert(name) } }
      let displayable = triggers[tip.id] ?? []
      var names = tip.variants
      for entry in real + held + displayable {
        if let name = entry.variant, !names.contains(name) { names.append(name) }
      }
      // The primary metric's trigger: a holdout's first counterfactual exposure, another variant's first
      // `eligibility` entry with `shouldDisplay: true` (the same engine event, drawn or not).
      func triggered(_ first: HistoryEvent?) -> AccountConversion? {
        guard let goals, let goal = tip.goal else { return nil }
        return context.conversion(after: first, goals: goals, goal: goal).estimated(configuration.statistics)
      }
      var overall = context.summarize(outcomes, impressions: real, goals: goals)
      overall.triggered = triggered(displayable.first { !holdouts.contains($0.variant ?? "") })
      var metrics = TipMetrics(
        tipID: tip.id, goal: tip.goal, overall: overall,
        variants: names.map { name in
          if holdouts.contains(name) {
            var set = context.summarize(
              heldOutcomes.filter { $0.impression.variant == name }, impressions: held.filter { $0.variant == name },
              goals: goals, counterfactual: true)
            set.holdout = true
            set.triggered = triggered(held.first { $0.variant == name })
            return (name, set)
          }
          var set = context.summarize(
            outcomes.filter { $0.impression.variant == name }, impressions: real.filter { $0.variant == name },
            goals: goals)
          set.triggered = triggered(displayable.first { $0.variant == name })
          return (name, set)
        })
      metrics.weights = tip.weights
      metrics.compare(options: configuration.statistics)
      report.tips.append(metrics)
    }
    return report
  }

  /// The median, the mean of the two middle values for an even count; nil for no values.
  public static func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  }

  /// What became of one impression.
  struct Outcome {
    var impression: HistoryEvent
    var inPeriod: Bool
    /// (1): converted, or still pending; neither means decided against.
    var converted = false
    var goalPending = false
    /// (2): this impression starts an exposure; its duration to the goal, if reached.
    var startsExposure = false
    var timeToGoal: Double?
    /// (3)
    var closed = false
    var closePending = false
  }

  struct Context {
    var configuration: MetricsConfiguration
    var since: Timestamp?
    var until: Timestamp?
    var now: Timestamp
    /// The end of the period as far as it has happened: min(until, now).
    var end: Timestamp
    var historyStart: Timestamp?

    /// CUPED's covariate for an account first exposed (really or counterfactually) at `first`: its goal donations
    /// in the `baselineDays` before it (0 without an exposure: such an account is in no sample).
    func preExposure(_ first: HistoryEvent?, goals: [HistoryEvent]) -> Double {
      guard let first, !(until.map { first.at >= $0 } ?? false) else { return 0 }
      let from = first.at - configuration.baselineDays * 86_400
      return Double(goals.filter { $0.cursor < first.cursor && $0.at >= from }.count)
    }

    /// The primary metric of one account triggered first at `trigger` (nil: never): counted when the trigger is in
    /// the period; converted when the first goal donation after it comes within the goal's window; pending when none
    /// has yet and the window is still open.
    func conversion(after trigger: HistoryEvent?, goals: [HistoryEvent], goal: TipGoal) -> AccountConversion {
      guard let trigger, inPeriod(trigger.at) else { return .none }
      let covariate = preExposure(trigger, goals: goals)
      let reached = first(after: trigger.cursor, in: goals)
      if let reached, reached.at - trigger.at <= goal.within {
        return AccountConversion(
          sample: AccountSample(converted: 1, decided: 1, covariate: covariate), triggered: 1, pending: 0)
      }
      if now - trigger.at <= goal.within {
        return AccountConversion(sample: AccountSample(), triggered: 1, pending: 1)
      }
      return AccountConversion(
        sample: AccountSample(converted: 0, decided: 1, covariate: covariate), triggered: 1, pending: 0)
    }

    func inPeriod(_ at: Timestamp) -> Bool {
      (since.map { at >= $0 } ?? true) && (until.map { at < $0 } ?? true)
    }

    /// The first entry of `list` (sorted by cursor) after `cursor`.
    func first(after cursor: Int64, in list: [HistoryEvent]) -> HistoryEvent? {
      var low = 0
      var high = list.count
      while low < high {
        let mid = (low + high) / 2
        if list[mid].cursor <= cursor { low = mid + 1 } else { high = mid }
      }
      return low < list.count ? list[low] : nil
    }

    func outcomes(
      impressions: [HistoryEvent], actions: [HistoryEvent], goals: [HistoryEvent]?, goal: TipGoal?,
      closes: [HistoryEvent]?
    ) -> [Outcome] {
      var out: [Outcome] = []
      var previous: HistoryEvent?
      for (index, impression) in impressions.enumerated() {
        var outcome = Outcome(impression: impression, inPeriod: inPeriod(impression.at))
        let next = index + 1 < impressions.count ? impressions[index + 1] : nil
        let nextCursor = next?.cursor ?? .max
        if let goals, let goal {
          let reached = first(after: impression.cursor, in: goals)
          if let reached, reached.cursor < nextCursor, reached.at - impression.at <= goal.within {
            outcome.converted = true
          } else if reached == nil, next == nil, now - impression.at <= goal.within {
            outcome.goalPending = true
          }
          // An exposure starts when no impression came since the last goal donation.
          if let previous {
            let between = first(after: previous.cursor, in: goals)
            outcome.startsExposure = between.map { $0.cursor < impression.cursor } ?? false
          } else {
            outcome.startsExposure = true
          }
          if outcome.startsExposure, let reached { outcome.timeToGoal = reached.at - impression.at }
        }
        if let closes {
          let close = first(after: impression.cursor, in: closes)
          let action = first(after: impression.cursor, in: actions)
          let actionCursor = action?.cursor ?? .max
          if let close, close.cursor < nextCursor, close.cursor < actionCursor,
            close.at - impression.at <= configuration.closeWindow
          {
            outcome.closed = true
          } else if close == nil, next == nil, action == nil, now - impression.at <= configuration.closeWindow {
            outcome.closePending = true
          }
        }
        out.append(outcome)
        previous = impression
      }
      return out
    }

    /// The metrics of some outcomes (all of one tip, or of one variant) and their impressions. `counterfactual`: a
    /// holdout's (no close rate, no before/after).
    func summarize(
      _ outcomes: [Outcome], impressions: [HistoryEvent], goals: [HistoryEvent]?, counterfactual: Bool = false
    ) -> MetricSet {
      let period = outcomes.filter(\.inPeriod)
      var set = MetricSet(impressions: period.count)
      if let goals {
        let converted = period.filter(\.converted).count
        let pending = period.filter(\.goalPending).count
        let decided = period.count - pending
        let covariate = preExposure(outcomes.first?.impression, goals: goals)
        set.goal = GoalConversion(
          sample: AccountSample(converted: converted, decided: decided, covariate: covariate), converted: converted,
          decided: decided, pending: pending, options: configuration.statistics)
        set.timeToGoal = timeToFirstUse(impressions: impressions, goals: goals)
        let exposures = period.filter(\.startsExposure)
        let samples = exposures.compactMap(\.timeToGoal)
        set.timeToGoalPerExposure = TimeToGoal(values: samples, open: exposures.count - samples.count)
        if !counterfactual { set.goalRate = goalRate(impressions: impressions, goals: goals) }
      }
      if configuration.appClosedEvent != nil && !counterfactual {
        let closes = period.filter(\.closed).count
        let pending = period.filter(\.closePending).count
        let decided = period.count - pending
        set.close = CloseRate(
          sample: AccountSample(converted: closes, decided: decided), closes: closes, decided: decided,
          pending: pending, configuration: configuration)
      }
      return set
    }

    /// (2) per install: the first goal after the first impression (of `impressions`, in cursor order), minus it; one
    /// sample when the first impression is in the period and a goal followed it, one open install when none did.
    func timeToFirstUse(impressions: [HistoryEvent], goals: [HistoryEvent]) -> TimeToGoal {
      guard let first = impressions.first, inPeriod(first.at) else {
        return TimeToGoal(samples: 0, median: nil, open: 0)
      }
      guard let reached = self.first(after: first.cursor, in: goals) else {
        return TimeToGoal(samples: 0, median: nil, open: 1)
      }
      return TimeToGoal(values: [reached.at - first.at], open: 0)
    }

    /// (4): goal donations per day before and after the first impression (before `until`).
    func goalRate(impressions: [HistoryEvent], goals: [HistoryEvent]) -> GoalRateChange {
      guard let first = impressions.first(where: { impression in until.map { impression.at < $0 } ?? true }) else {
        return GoalRateChange(firstImpressionAt: nil)
      }
      let span = configuration.baselineDays * 86_400
      let from = max(first.at - span, historyStart ?? (first.at - span))
      let to = max(first.at, min(first.at + span, end))
      let before = goals.filter { $0.cursor < first.cursor && $0.at >= from && $0.at < first.at }.count
      // The span after ends at `until` (excluded) or now (included: nothing has happened after now).
      let after = goals.filter { $0.cursor > first.cursor && ($0.at < to || ($0.at == to && to == now)) }.count
      return GoalRateChange(
        firstImpressionAt: first.at, before: RateWindow(from: from, to: first.at, count: before),
        after: RateWindow(from: first.at, to: to, count: after))
    }
  }
}
