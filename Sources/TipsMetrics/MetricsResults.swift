public import TipsEngine

// What `Metrics.compute` answers: per tip, its metric sets (overall, per variant, against its holdout) and the
// intervals around them (see MetricsConfiguration and AccountStatistics for how they are computed).

/// A tip the metrics are computed for.
public struct MetricsTip: Sendable, Hashable {
  public var id: String
  public var goal: TipGoal?
  /// Its declared variants, in order (others seen in the history are listed after them).
  public var variants: [String]
  /// Those of its variants that are holdouts (their installs never see the tip).
  public var holdouts: Set<String>
  /// The variants' assignment weights (absent: 1), what the sample-ratio check expects.
  public var weights: [String: Double]

  public init(
    id: String, goal: TipGoal?, variants: [String] = [], holdouts: Set<String> = [], weights: [String: Double] = [:]
  ) {
    self.id = id
    self.goal = goal
    self.variants = variants
    self.holdouts = holdouts
    self.weights = weights
  }

  public init(_ definition: TipDefinition) {
    self.init(
      id: definition.id, goal: definition.goal, variants: definition.variants.map(\.name),
      holdouts: Set(definition.variants.filter(\.holdout).map(\.name)),
      weights: Dictionary(definition.variants.map { ($0.name, $0.weight ?? 1) }, uniquingKeysWith: { a, _ in a }))
  }
}

/// (1) Impressions followed by the goal event within the goal's window (last touch: see ``Metrics``).
public struct GoalConversion: Sendable, Hashable {
  /// Impressions the goal event followed in time.
  public var converted: Int
  /// Impressions whose outcome is known (converted, or their window closed, or a later impression took over).
  public var decided: Int
  /// Impressions whose window is still open, with no goal and no later impression yet: not in the rate.
  public var pending: Int
  /// `converted / decided`; nil when nothing is decided.
  public var rate: Double?
  /// Accounts with a decided impression: the interval's sample (one install's: 0 or 1).
  public var accounts: Int
  /// The rate's fixed-horizon 95% interval across accounts (delta method); nil: not enough data yet.
  public var interval: Interval?
  /// The per-account sums the pooling needs (not in results; not compared).
  public internal(set) var sample: AccountSample

  public init(
    converted: Int, decided: Int, pending: Int, rate: Double?, accounts: Int? = nil, interval: Interval? = nil
  ) {
    self.converted = converted
    self.decided = decided
    self.pending = pending
    self.rate = rate
    self.accounts = accounts ?? (decided > 0 ? 1 : 0)
    self.interval = interval
    sample = AccountSample(converted: converted, decided: decided)
  }

  /// From pooled (or one account's) per-account sums, with the interval their accounts support.
  init(sample: AccountSample, converted: Int, decided: Int, pending: Int, options: StatisticsOptions) {
    let estimate = sample.estimate(minimum: options.minimumAccounts)
    self.init(
      converted: converted, decided: decided, pending: pending,
      rate: decided > 0 ? Double(converted) / Double(decided) : nil,
      accounts: sample.accounts, interval: estimate.bounds.map { Interval(low: $0.low, high: $0.high) })
    self.sample = sample
  }

  public var proportion: Proportion { Proportion(converted: converted, decided: decided, sample: sample) }

  public static func == (a: GoalConversion, b: GoalConversion) -> Bool {
    a.converted == b.converted && a.decided == b.decided && a.pending == b.pending && a.rate == b.rate
      && a.accounts == b.accounts && a.interval == b.interval
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(converted)
    hasher.combine(decided)
    hasher.combine(pending)
  }
}

/// (2) Time to first use: from the install's first impression of the tip to the first goal event after it — one
/// sample per install (`timeToGoal`); or per exposure (`timeToGoalPerExposure`, see ``Metrics``).
public struct TimeToGoal: Sendable, Hashable {
  /// Installs (or exposures) that reached the goal: the sample size of the median.
  public var samples: Int
  /// Median seconds; the mean of the two middle samples for an even count; nil without samples.
  public var median: Double?
  /// Installs (or exposures) with no goal event yet.
  public var open: Int
  /// The samples themselves, when computed here (not in results: across accounts, ``FleetMetrics`` takes the
  /// median of every account's samples). Not compared.
  public internal(set) var values: [Double] = []

  public init(samples: Int, median: Double?, open: Int) {
    self.samples = samples
    self.median = median
    self.open = open
  }

  init(values: [Double], open: Int) {
    self.init(samples: values.count, median: Metrics.median(values), open: open)
    self.values = values
  }

  public static func == (a: TimeToGoal, b: TimeToGoal) -> Bool {
    a.samples == b.samples && a.median == b.median && a.open == b.open
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(samples)
    hasher.combine(median)
    hasher.combine(open)
  }
}

/// (3) Impressions right after which the app was closed.
public struct CloseRate: Sendable, Hashable {
  public var closes: Int
  public var decided: Int
  /// Impressions less than the close window old with nothing after them yet: not in the rate.
  public var pending: Int
  public var rate: Double?
  /// `rate` is above `--close-rate-alert`.
  public var alert: Bool
  /// Accounts with a decided impression: the interval's sample (one install's: 0 or 1).
  public var accounts: Int
  /// The rate's fixed-horizon 95% interval across accounts (delta method); nil: not enough data yet.
  public var interval: Interval?
  /// The per-account sums the pooling needs (not in results; not compared).
  public internal(set) var sample: AccountSample

  public init(
    closes: Int, decided: Int, pending: Int, rate: Double?, alert: Bool, accounts: Int? = nil, interval: Interval? = nil
  ) {
    self.closes = closes
    self.decided = decided
    self.pending = pending
    self.rate = rate
    self.alert = alert
    self.accounts = accounts ?? (decided > 0 ? 1 : 0)
    self.interval = interval
    sample = AccountSample(converted: closes, decided: decided)
  }

  /// From pooled (or one account's) per-account sums, with the interval their accounts support.
  init(sample: AccountSample, closes: Int, decided: Int, pending: Int, configuration: MetricsConfiguration) {
    let rate = decided > 0 ? Double(closes) / Double(decided) : nil
    let estimate = sample.estimate(minimum: configuration.statistics.minimumAccounts)
    self.init(
      closes: closes, decided: decided, pending: pending, rate: rate,
      alert: rate.map { rate in configuration.closeRateAlert.map { rate > $0 } ?? false } ?? false,
      accounts: sample.accounts, interval: estimate.bounds.map { Interval(low: $0.low, high: $0.high) })
    self.sample = sample
  }

  public static func == (a: CloseRate, b: CloseRate) -> Bool {
    a.closes == b.closes && a.decided == b.decided && a.pending == b.pending && a.rate == b.rate && a.alert == b.alert
      && a.accounts == b.accounts && a.interval == b.interval
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(closes)
    hasher.combine(decided)
    hasher.combine(pending)
  }
}

/// A span of days and the goal donations in it.
public struct RateWindow: Sendable, Hashable {
  public var from: Timestamp
  public var to: Timestamp
  public var count: Int
  /// Across accounts (``FleetMetrics``): the days every account's window spans, summed (`from` and `to` are then
  /// the earliest start and the latest end), so `perDay` is goal donations per account-day. nil: `to − from`.
  public var accountDays: Double?

  public init(from: Timestamp, to: Timestamp, count: Int, accountDays: Double? = nil) {
    self.from = from
    self.to = to
    self.count = count
    self.accountDays = accountDays
  }

  public var days: Double { accountDays ?? max(0, to - from) / 86_400 }
  /// Donations per day; nil when the span covers less than a day (half an hour of history is no daily rate).
  public var perDay: Double? { days >= 1 ? Double(count) / days : nil }
}

/// (4) Seed 000's "did usage of that feature move?": the goal event's daily rate in the days before the first
/// impression and after it.
public struct GoalRateChange: Sendable, Hashable {
  /// The first impression in the history (before `until`); nil when there is none.
  public var firstImpressionAt: Timestamp?
  public var before: RateWindow?
  public var after: RateWindow?

  public init(firstImpressionAt: Timestamp?, before: RateWindow? = nil, after: RateWindow? = nil) {
    self.firstImpressionAt = firstImpressionAt
    self.before = before
    self.after = after
  }

  /// `after.perDay / before.perDay`; nil when either is unknown or the rate before is 0.
  public var change: Double? {
    guard let b = before?.perDay, b > 0, let a = after?.perDay else { return nil }
    return a / b
  }
}

/// The metrics of one tip, or of one of its variants.
public struct MetricSet: Sendable, Hashable {
  /// Impressions in the period (for a holdout: counterfactual impressions, the instants the tip would have become
  /// displayable).
  public var impressions: Int
  /// nil when the tip declares no goal.
  public var goal: GoalConversion?
  /// Time to first use, one sample per install (the reference's definition).
  public var timeToGoal: TimeToGoal?
  /// The same, one sample per exposure (an impression with none of the tip since the last goal donation).
  public var timeToGoalPerExposure: TimeToGoal?
  /// nil when no app-closed event is configured (reported as unavailable), and for a holdout.
  public var close: CloseRate?
  public var goalRate: GoalRateChange?
  /// A holdout's set: computed from counterfactual impressions.
  public var holdout: Bool
  /// The primary metric (issue #46): the accounts triggered (the tip became displayable for them; a holdout's: its
  /// counterfactual exposure), and of those the ones that did the goal within its window after the first trigger.
  /// nil when the tip declares no goal.
  public var triggered: AccountConversion?

  public init(
    impressions: Int, goal: GoalConversion? = nil, timeToGoal: TimeToGoal? = nil,
    timeToGoalPerExposure: TimeToGoal? = nil, close: CloseRate? = nil, goalRate: GoalRateChange? = nil,
    holdout: Bool = false, triggered: AccountConversion? = nil
  ) {
    self.triggered = triggered
    self.impressions = impressions
    self.goal = goal
    self.timeToGoal = timeToGoal
    self.timeToGoalPerExposure = timeToGoalPerExposure
    self.close = close
    self.goalRate = goalRate
    self.holdout = holdout
  }
}

/// A goal rate with its sample: `converted / decided`, and the per-account sums behind it.
public struct Proportion: Sendable, Hashable {
  public var converted: Int
  public var decided: Int
  /// The per-account sums the statistics need (not in results; not compared): one account's by default.
  public var sample: AccountSample

  public init(converted: Int, decided: Int, sample: AccountSample? = nil) {
    self.converted = converted
    self.decided = decided
    self.sample = sample ?? AccountSample(converted: converted, decided: decided)
  }

  public var rate: Double? { decided > 0 ? Double(converted) / Double(decided) : nil }

  public static func + (a: Proportion, b: Proportion) -> Proportion {
    Proportion(converted: a.converted + b.converted, decided: a.decided + b.decided, sample: a.sample + b.sample)
  }

  public static func == (a: Proportion, b: Proportion) -> Bool {
    a.converted == b.converted && a.decided == b.decided
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(converted)
    hasher.combine(decided)
  }
}

/// One arm's goal rate minus another's with its intervals, the account being the unit (``AccountSample``): what
/// ``Lift`` and ``VariantComparison`` report.
public struct Difference: Sendable, Hashable {
  /// The difference of the two rates (ratios of sums); nil when either side has nothing decided.
  public var difference: Double?
  /// Accounts with a decided impression on each side.
  public var accounts: Int
  public var againstAccounts: Int
  /// Fewer accounts than this on either side: not enough data yet (no intervals).
  public var minimumAccounts: Int
  /// The standard error across accounts (delta method); nil without enough data.
  public var standardError: Double?
  /// Valid when looked at once, at a sample fixed in advance.
  public var fixedHorizon: Interval?
  /// The asymptotic confidence sequence: valid however often it is looked at. `low`/`high` in results.
  public var alwaysValid: Interval?
  /// `metrics/get {cuped: true}` with enough data: the difference adjusted for the pre-exposure covariate.
  public var cuped: CupedEstimate?
  /// The comparisons the intervals are corrected for (Bonferroni: each at α / family): a tip's lift and comparisons.
  public var family = 1
  /// `a.rate / b.rate − 1` with its intervals; nil without enough data or when `b.rate` is 0.
  public var relative: RelativeDifference?

  public init(
    difference: Double?, accounts: Int, againstAccounts: Int, minimumAccounts: Int, standardError: Double? = nil,
    fixedHorizon: Interval? = nil, alwaysValid: Interval? = nil, cuped: CupedEstimate? = nil
  ) {
    self.difference = difference
    self.accounts = accounts
    self.againstAccounts = againstAccounts
    self.minimumAccounts = minimumAccounts
    self.standardError = standardError
    self.fixedHorizon = fixedHorizon
    self.alwaysValid = alwaysValid
    self.cuped = cuped
  }

  /// `a − b` computed from their per-account sums.
  public init(_ a: Proportion, _ b: Proportion, options: StatisticsOptions) {
    self = AccountSample.difference(a.sample, b.sample, options: options)
  }

  /// No interval: either side has fewer accounts than the minimum.
  public var notEnoughData: Bool { alwaysValid == nil }
}

/// One variant against another (the first declared variant that is not a holdout: the control): the primary
/// metric's difference (``AccountConversion``: accounts that did the goal after their first trigger), the secondary
/// per-impression one, and the sample-ratio check of the two.
public struct VariantComparison: Sendable, Hashable {
  public var variant: String
  public var against: String
  /// The primary metric of each side: converted accounts over decided ones.
  public var variantRate: Proportion
  public var againstRate: Proportion
  public var estimate: Difference
  /// Secondary: goal conversions per impression, capped.
  public var perImpression: ImpressionDifference?
  public var srm: SampleRatio?

  public init(
    variant: String, against: String, variantRate: Proportion, againstRate: Proportion, estimate: Difference,
    perImpression: ImpressionDifference? = nil, srm: SampleRatio? = nil
  ) {
    self.variant = variant
    self.against = against
    self.variantRate = variantRate
    self.againstRate = againstRate
    self.estimate = estimate
    self.perImpression = perImpression
    self.srm = srm
  }
}

/// Seed 000's "did the tip change behaviour?" answered against a holdout (issue #46): of the accounts triggered in
/// each arm (the tip became displayable for them, drawn or not; the holdout's counterfactually), the share that did
/// the goal within its window after the first trigger — the tip arm's minus the holdout's, each account one unit.
public struct Lift: Sendable, Hashable {
  /// Every variant that is not a holdout.
  public var exposed: AccountConversion
  /// The holdout variants.
  public var holdout: AccountConversion
  public var estimate: Difference
  /// Secondary: real impressions against counterfactual ones, per impression, capped.
  public var perImpression: ImpressionDifference?
  /// Triggered accounts of every variant of the tip against their weights.
  public var srm: SampleRatio?

  public init(
    exposed: AccountConversion, holdout: AccountConversion, estimate: Difference,
    perImpression: ImpressionDifference? = nil, srm: SampleRatio? = nil
  ) {
    self.exposed = exposed
    self.holdout = holdout
    self.estimate = estimate
    self.perImpression = perImpression
    self.srm = srm
  }

  /// Exposed rate − holdout rate; nil when either has no decided account.
  public var difference: Double? { estimate.difference }

  /// The always-valid interval (``Difference/alwaysValid``).
  public var interval: Interval? { estimate.alwaysValid }
}

public struct TipMetrics: Sendable, Hashable {
  public var tipID: String
  public var goal: TipGoal?
  /// Every variant that is not a holdout (real impressions only).
  public var overall: MetricSet
  /// Per variant, declared ones first (empty for a tip without variants).
  public var variants: [(name: String, metrics: MetricSet)]
  /// For a tip with a goal and two or more variants that are not holdouts: each of them after the first against the
  /// first (the control), by goal conversion (``compare(options:)``).
  public var comparisons: [VariantComparison] = []
  /// Against the holdout, for a tip with a goal and a holdout variant (declared or seen).
  public var lift: Lift?
  /// The variants' assignment weights (absent: 1), for the sample-ratio checks.
  public var weights: [String: Double] = [:]

  public init(tipID: String, goal: TipGoal?, overall: MetricSet, variants: [(name: String, metrics: MetricSet)] = []) {
    self.tipID = tipID
    self.goal = goal
    self.overall = overall
    self.variants = variants
  }

  public static func == (a: TipMetrics, b: TipMetrics) -> Bool {
    a.tipID == b.tipID && a.goal == b.goal && a.overall == b.overall && a.variants.map(\.name) == b.variants.map(\.name)
      && a.variants.map(\.metrics) == b.variants.map(\.metrics) && a.lift == b.lift && a.comparisons == b.comparisons
  }

  public func hash(into hasher: inout Hasher) { hasher.combine(tipID) }

  /// The metrics of one variant.
  public func variant(_ name: String) -> MetricSet? { variants.first { $0.name == name }?.metrics }

  /// Sets ``comparisons`` and ``lift`` from the variants' sets: each variant that is not a holdout against the first
  /// (the control), and every such variant together against the holdout variants (a lift when the tip has a goal and
  /// a holdout). The primary difference is the variants' ``MetricSet/triggered``, the secondary their `goal` per
  /// impression; every interval of the tip is corrected for the number of these comparisons (Bonferroni).
  public mutating func compare(options: StatisticsOptions) {
    let compared = variants.filter { !$0.metrics.holdout && $0.metrics.goal != nil }
    let held = variants.filter { $0.metrics.holdout }
    let hasLift = goal != nil && !held.isEmpty
    let family = max(1, compared.count - 1 + (hasLift ? 1 : 0))
    func primary(_ set: MetricSet) -> AccountConversion { set.triggered ?? .none }
    func proportion(_ c: AccountConversion) -> Proportion {
      Proportion(converted: c.converted, decided: c.decided, sample: c.sample)
    }
    func impressions(_ set: MetricSet) -> Proportion {
      set.goal?.proportion ?? Proportion(converted: 0, decided: 0, sample: AccountSample())
    }
    comparisons = []
    if let control = compared.first {
      for variant in compared.dropFirst() {
        let (a, b) = (primary(variant.metrics), primary(control.metrics))
        comparisons.append(
          VariantComparison(
            variant: variant.name, against: control.name, variantRate: proportion(a), againstRate: proportion(b),
            estimate: AccountSample.difference(a.sample, b.sample, options: options, family: family),
            perImpression: ImpressionDifference(
              impressions(variant.metrics), impressions(control.metrics), options: options, family: family),
            srm: SampleRatio(
              observed: [(variant.name, a.triggered), (control.name, b.triggered)], weights: weights)))
      }
    }
    guard hasLift else {
      lift = nil
      return
    }
    let exposedSets = variants.filter { !$0.metrics.holdout }.map(\.metrics)
    let exposed = exposedSets.map(primary).reduce(AccountConversion.none, +).estimated(options)
    let holdout = held.map { primary($0.metrics) }.reduce(AccountConversion.none, +).estimated(options)
    let exposedImpressions = exposedSets.map(impressions).reduce(Proportion(converted: 0, decided: 0), +)
    let heldImpressions = held.map { impressions($0.metrics) }.reduce(Proportion(converted: 0, decided: 0), +)
    lift = Lift(
      exposed: exposed, holdout: holdout,
      estimate: AccountSample.difference(exposed.sample, holdout.sample, options: options, family: family),
      perImpression: ImpressionDifference(exposedImpressions, heldImpressions, options: options, family: family),
      srm: SampleRatio(observed: variants.map { ($0.name, primary($0.metrics).triggered) }, weights: weights))
  }
}

public struct MetricsReport: Sendable, Hashable {
  public var now: Timestamp
  public var since: Timestamp?
  public var until: Timestamp?
  public var configuration: MetricsConfiguration
  /// The instant of the oldest history entry kept (nil: empty history).
  public var historyStart: Timestamp?
  public var tips: [TipMetrics]
  /// Across accounts (hosted mode, ``FleetMetrics``): how many accounts' histories were read; nil for one install's.
  public var accounts: Int?

  public init(
    now: Timestamp, since: Timestamp?, until: Timestamp?, configuration: MetricsConfiguration, historyStart: Timestamp?,
    tips: [TipMetrics]
  ) {
    self.now = now
    self.since = since
    self.until = until
    self.configuration = configuration
    self.historyStart = historyStart
    self.tips = tips
  }

  public func tip(_ id: String) -> TipMetrics? { tips.first { $0.tipID == id } }

  /// The same figures with every interval recomputed from the per-account sums they hold under other statistics
  /// options (e.g. `cuped`): a computed or pooled report, not one read back from JSON (which holds no sums).
  public func applying(_ statistics: StatisticsOptions) -> MetricsReport {
    var report = self
    report.configuration.statistics = statistics
    func apply(_ set: MetricSet) -> MetricSet {
      var set = set
      if let goal = set.goal {
        set.goal = GoalConversion(
          sample: goal.sample, converted: goal.converted, decided: goal.decided, pending: goal.pending,
          options: statistics)
      }
      if let close = set.close {
        set.close = CloseRate(
          sample: close.sample, closes: close.closes, decided: close.decided, pending: close.pending,
          configuration: report.configuration)
      }
      return set
    }
    report.tips = tips.map { tip in
      var tip = tip
      tip.overall = apply(tip.overall)
      tip.variants = tip.variants.map { ($0.name, apply($0.metrics)) }
      tip.variants = tip.variants.map { name, set in
        var set = set
        set.triggered = set.triggered?.estimated(statistics)
        return (name, set)
      }
      tip.overall.triggered = tip.overall.triggered?.estimated(statistics)
      tip.compare(options: statistics)
      return tip
    }
    return report
  }
}
