public import TipsEngine

/// Seed 000's metrics across accounts: hosted mode's admin `metrics/get` without an account. Each account's history
/// is one install's, so each is computed on its own exactly as ``Metrics/compute(history:tips:configuration:since:until:now:historyStart:)``
/// computes one install's (``add(history:historyStart:)``), or arrives as that one-account report
/// (``add(account:)``), and the figures are then pooled, one account at a time (memory proportional to the tips and
/// the samples, not to the histories). The account is the unit (issue #38, docs/measuring.md):
///
/// - impressions, goal conversions, closes and their pending impressions are summed, and each rate is recomputed
///   from the sums (a ratio of sums); its fixed-horizon 95% interval comes from the per-account outcomes (the delta
///   method over the accounts' sums of n, c and their products, ``AccountSample``), or is "not enough data yet" under
///   ``StatisticsOptions/minimumAccounts`` accounts;
/// - time to first use is the median of every account's sample (one per account that reached the goal: the
///   reference's per-install definition), and per exposure the median of every account's exposures;
/// - goal rates before and after the first impression are per account-day: each account's window's donations and
///   days summed (``RateWindow/accountDays``);
/// - lift against a holdout compares the triggered accounts of the exposed arm with the held-out ones (issue #46:
///   the share that did the goal after their first trigger), and variant comparisons each variant's with the
///   control's: the difference with a fixed-horizon and an always-valid interval, corrected for the tip's
///   comparisons, CUPED-adjusted on request (``Difference``), its sample-ratio check, and the per-impression rates
///   second (``ImpressionDifference``).
public struct FleetMetrics: Sendable {
  public let tips: [MetricsTip]
  public let configuration: MetricsConfiguration
  public let since: Timestamp?
  public let until: Timestamp?
  public let now: Timestamp
  /// Accounts added so far.
  public private(set) var accounts = 0
  private var historyStart: Timestamp?
  private var pooled: [String: PooledTip] = [:]

  public init(
    tips: [MetricsTip], configuration: MetricsConfiguration, since: Timestamp? = nil, until: Timestamp? = nil,
    now: Timestamp
  ) {
    self.tips = tips
    self.configuration = configuration
    self.since = since
    self.until = until
    self.now = now
    for tip in tips { pooled[tip.id] = PooledTip(variants: tip.variants, holdouts: tip.holdouts) }
  }

  /// Adds one account: its history (any order) and the instant of its oldest kept entry.
  public mutating func add(history: [HistoryEvent], historyStart: Timestamp?) {
    add(
      account: Metrics.compute(
        history: history, tips: tips, configuration: configuration, since: since, until: until, now: now,
        historyStart: historyStart))
  }

  /// Adds one account's own report (``Metrics/compute(history:tips:configuration:since:until:now:historyStart:)``
  /// over its history, with this pool's tips, period and configuration). What is pooled of it, per tip and per set
  /// (overall, each variant, each side of the lift): the counts, the account's ``AccountSample`` (its decided and
  /// converted impressions and its pre-exposure covariate), its time-to-goal samples and its goal-rate windows.
  public mutating func add(account report: MetricsReport) {
    accounts += 1
    if let start = report.historyStart { self.historyStart = min(self.historyStart ?? start, start) }
    for tip in report.tips { pooled[tip.tipID]?.add(tip) }
  }

  /// The pooled report, in the tips' order.
  public func report() -> MetricsReport {
    var report = MetricsReport(
      now: now, since: since, until: until, configuration: configuration, historyStart: historyStart, tips: [])
    report.accounts = accounts
    for tip in tips {
      guard let pooled = pooled[tip.id] else { continue }
      var metrics = TipMetrics(
        tipID: tip.id, goal: tip.goal, overall: pooled.overall.set(configuration),
        variants: pooled.variants.map { ($0, pooled.byVariant[$0]!.set(configuration)) })
      // The lift and the comparisons come from the pooled variants (a declared holdout's set is marked as one
      // before any account arrives, so the tip has a lift from the start, as one install's does).
      metrics.weights = tip.weights
      metrics.compare(options: configuration.statistics)
      report.tips.append(metrics)
    }
    return report
  }
}

/// One tip's figures summed over accounts.
private struct PooledTip {
  var overall = PooledSet()
  /// Declared variants first, then others in the order accounts reported them.
  var variants: [String]
  var byVariant: [String: PooledSet] = [:]

  init(variants: [String], holdouts: Set<String>) {
    self.variants = variants
    for name in variants { byVariant[name] = PooledSet(holdout: holdouts.contains(name)) }
  }

  mutating func add(_ tip: TipMetrics) {
    overall.add(tip.overall)
    for (name, set) in tip.variants {
      if byVariant[name] == nil {
        variants.append(name)
        byVariant[name] = PooledSet()
      }
      byVariant[name]!.add(set)
    }
  }
}

/// One metric set's figures summed over accounts.
private struct PooledSet {
  var impressions = 0
  var holdout = false
  var goal: (converted: Int, decided: Int, pending: Int, sample: AccountSample)?
  var firstUse: (values: [Double], open: Int)?
  var perExposure: (values: [Double], open: Int)?
  var close: (closes: Int, decided: Int, pending: Int, sample: AccountSample)?
  var goalRate: (first: Timestamp?, before: PooledWindow?, after: PooledWindow?)?
  var triggered: AccountConversion?

  mutating func add(_ set: MetricSet) {
    impressions += set.impressions
    holdout = holdout || set.holdout
    if let g = set.goal {
      if goal == nil { goal = (0, 0, 0, AccountSample()) }
      goal!.converted += g.converted
      goal!.decided += g.decided
      goal!.pending += g.pending
      goal!.sample += g.sample
    }
    if let t = set.triggered {
      if triggered == nil { triggered = AccountConversion.none }
      triggered! += t
    }
    if let t = set.timeToGoal {
      let sum = firstUse ?? ([], 0)
      firstUse = (sum.values + t.values, sum.open + t.open)
    }
    if let t = set.timeToGoalPerExposure {
      let sum = perExposure ?? ([], 0)
      perExposure = (sum.values + t.values, sum.open + t.open)
    }
    if let c = set.close {
      if close == nil { close = (0, 0, 0, AccountSample()) }
      close!.closes += c.closes
      close!.decided += c.decided
      close!.pending += c.pending
      close!.sample += c.sample
    }
    if let r = set.goalRate {
      var sum = goalRate ?? (nil, nil, nil)
      if let at = r.firstImpressionAt { sum.first = min(sum.first ?? at, at) }
      if let window = r.before { sum.before = (sum.before ?? PooledWindow()).adding(window) }
      if let window = r.after { sum.after = (sum.after ?? PooledWindow()).adding(window) }
      goalRate = sum
    }
  }

  func set(_ configuration: MetricsConfiguration) -> MetricSet {
    var set = MetricSet(impressions: impressions, holdout: holdout)
    if let goal {
      set.goal = GoalConversion(
        sample: goal.sample, converted: goal.converted, decided: goal.decided, pending: goal.pending,
        options: configuration.statistics)
    }
    if let firstUse { set.timeToGoal = TimeToGoal(values: firstUse.values, open: firstUse.open) }
    if let perExposure { set.timeToGoalPerExposure = TimeToGoal(values: perExposure.values, open: perExposure.open) }
    if let close {
      set.close = CloseRate(
        sample: close.sample, closes: close.closes, decided: close.decided, pending: close.pending,
        configuration: configuration)
    }
    set.triggered = triggered?.estimated(configuration.statistics)
    if let goalRate {
      set.goalRate = GoalRateChange(
        firstImpressionAt: goalRate.first, before: goalRate.before?.window, after: goalRate.after?.window)
    }
    return set
  }
}

/// Rate windows summed over accounts: donations and days added, the span from the earliest start to the latest end.
private struct PooledWindow {
  var from = Timestamp.infinity
  var to = -Timestamp.infinity
  var count = 0
  var days = 0.0

  func adding(_ window: RateWindow) -> PooledWindow {
    PooledWindow(
      from: min(from, window.from), to: max(to, window.to), count: count + window.count, days: days + window.days)
  }

  var window: RateWindow { RateWindow(from: from, to: to, count: count, accountDays: days) }
}
