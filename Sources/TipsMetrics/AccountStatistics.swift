// The statistics of issue #38: the account is the unit. Every rate is a ratio of sums over accounts, R = Σcᵢ / Σnᵢ
// (cᵢ: an account's converted impressions, nᵢ: its decided ones), and its variance comes from the per-account
// outcomes (the delta method), not from treating impressions as independent. Differences between arms (a variant
// against the control, the exposed against a holdout) get a fixed-horizon interval and an always-valid one (an
// asymptotic confidence sequence), optionally CUPED-adjusted with a pre-exposure covariate. docs/measuring.md has the
// formulas and their references.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// How the intervals are computed (`metrics/get`'s `method`).
public struct StatisticsOptions: Sendable, Hashable {
  /// 95% two-sided.
  public static let confidence = 0.95
  /// The normal quantile for ``confidence``.
  public static let z = 1.959_963_984_540_054
  /// α = 1 − confidence.
  public static let alpha = 1 - confidence

  /// Below this many accounts on a side (with a decided impression) an interval is "not enough data yet".
  public var minimumAccounts: Int
  /// The total sample (accounts in both arms) the confidence sequence is tightest at (its ρ); any value keeps it valid.
  public var plannedAccounts: Int
  /// CUPED: differences adjusted with each account's goal donations in the `baselineDays` before its first trigger.
  public var cuped: Bool
  /// The secondary per-impression rate: each account's decided impressions and conversions are winsorized at this
  /// quantile of the accounts of both arms (``AccountSample/capped(_:_:quantile:)``); 1 caps nothing.
  public var capQuantile: Double

  public init(minimumAccounts: Int = 100, plannedAccounts: Int = 1_000, cuped: Bool = false, capQuantile: Double = 0.99)
  {
    self.minimumAccounts = minimumAccounts
    self.plannedAccounts = plannedAccounts
    self.cuped = cuped
    self.capQuantile = capQuantile
  }

  /// The two-sided normal quantile for `family` comparisons corrected by Bonferroni: Φ⁻¹(1 − α / (2m)).
  public static func z(family: Int) -> Double {
    family <= 1 ? z : normalQuantile(1 - alpha / (2 * Double(family)))
  }

  /// The confidence sequence's ρ, chosen so that its width is smallest at ``plannedAccounts`` (Waudby-Smith et al.,
  /// section B.2): ρ² = (−2 log α + log(−2 log α + 1)) / t*.
  public var rho: Double {
    let l = -2 * log(Self.alpha)
    return ((l + log(l + 1)) / Double(max(1, plannedAccounts))).squareRoot()
  }

  /// The always-valid half-width in standard errors at `accounts` in total: with x = tρ²,
  /// √((x + 1) / x · log((x + 1) / α²)) — the asymptotic confidence sequence μ̂ₜ ± σ̂ₜ √(2(tρ² + 1) / (t²ρ²) ·
  /// log(√(tρ² + 1) / α)) divided by the standard error σ̂ₜ / √t.
  /// With `family` comparisons (Bonferroni), α / m in place of α (ρ stays tuned for α: it never affects validity).
  public func alwaysValidMultiplier(accounts: Int, family: Int = 1) -> Double {
    let x = Double(accounts) * rho * rho
    let alpha = Self.alpha / Double(max(1, family))
    return ((x + 1) / x * log((x + 1) / (alpha * alpha))).squareRoot()
  }
}

/// The kind of an interval: `fixedHorizon` is valid when looked at once, at a sample fixed in advance;
/// `alwaysValid` (a confidence sequence) stays valid however often it is looked at.
public enum IntervalKind: String, Sendable, Hashable {
  case fixedHorizon
  case alwaysValid
}

/// A rate's per-account sufficient statistics: over the accounts with at least one decided impression, the sums of
/// nᵢ (decided), cᵢ (converted) and xᵢ (the pre-exposure covariate, for CUPED) and of their products. One account's
/// holds that account alone; adding two pools them. Memory is constant however many accounts are added.
public struct AccountSample: Sendable, Hashable {
  public private(set) var accounts = 0
  public private(set) var n = 0.0
  public private(set) var c = 0.0
  public private(set) var x = 0.0
  public private(set) var nn = 0.0
  public private(set) var cc = 0.0
  public private(set) var xx = 0.0
  public private(set) var nc = 0.0
  public private(set) var nx = 0.0
  public private(set) var cx = 0.0
  /// How many accounts had each (decided, converted) pair: what winsorizing needs (``capped(_:_:quantile:)``).
  /// Bounded by the distinct pairs, not by the accounts.
  public private(set) var counts: [AccountCount: Int] = [:]

  /// No account.
  public init() {}

  /// One account's outcomes: `converted` of `decided` impressions, and its covariate. An account with nothing decided
  /// is no account of the sample.
  public init(converted: Int, decided: Int, covariate: Double = 0) {
    guard decided > 0 else { return }
    let (n, c, x) = (Double(decided), Double(converted), covariate)
    self.accounts = 1
    self.n = n
    self.c = c
    self.x = x
    nn = n * n
    cc = c * c
    xx = x * x
    nc = n * c
    nx = n * x
    cx = c * x
    counts = [AccountCount(decided: decided, converted: converted): 1]
  }

  /// The pooled sample.
  public static func + (a: AccountSample, b: AccountSample) -> AccountSample {
    var sum = a
    sum += b
    return sum
  }

  /// Pools `b` into `a` in place (a fleet's pool: the histogram is not copied per account).
  public static func += (a: inout AccountSample, b: AccountSample) {
    a.accounts += b.accounts
    a.n += b.n
    a.c += b.c
    a.x += b.x
    a.nn += b.nn
    a.cc += b.cc
    a.xx += b.xx
    a.nc += b.nc
    a.nx += b.nx
    a.cx += b.cx
    for (pair, count) in b.counts { a.counts[pair, default: 0] += count }
  }

  /// `a` and `b` with every account's decided impressions and conversions winsorized at the `quantile` of the
  /// accounts of both (nearest rank: the smallest value at least that share of accounts do not exceed), conversions
  /// then at most the capped impressions. The covariate is dropped (no CUPED on the capped rate).
  public static func capped(_ a: AccountSample, _ b: AccountSample, quantile: Double) -> (
    AccountSample, AccountSample, Cap
  ) {
    var both = a.counts
    for (pair, count) in b.counts { both[pair, default: 0] += count }
    func cap(_ value: (AccountCount) -> Int) -> Int {
      var histogram: [Int: Int] = [:]
      for (pair, count) in both { histogram[value(pair), default: 0] += count }
      let total = histogram.values.reduce(0, +)
      let rank = max(1, Int((quantile * Double(total)).rounded(.up)))
      var seen = 0
      for (value, count) in histogram.sorted(by: { $0.key < $1.key }) {
        seen += count
        if seen >= rank { return value }
      }
      return histogram.keys.max() ?? 0
    }
    let limit = Cap(quantile: quantile, decided: cap(\.decided), converted: cap(\.converted))
    func apply(_ sample: AccountSample) -> AccountSample {
      var out = AccountSample()
      for (pair, count) in sample.counts {
        let decided = min(pair.decided, limit.decided)
        let converted = min(pair.converted, limit.converted, decided)
        var one = AccountSample(converted: converted, decided: decided)
        one.scale(by: count)
        out += one
      }
      return out
    }
    return (apply(a), apply(b), limit)
  }

  /// `count` accounts alike.
  private mutating func scale(by count: Int) {
    let k = Double(count)
    accounts *= count
    n *= k
    c *= k
    x *= k
    nn *= k
    cc *= k
    xx *= k
    nc *= k
    nx *= k
    cx *= k
    counts = counts.mapValues { $0 * count }
  }

  /// Σc / Σn; nil without a decided impression.
  public var rate: Double? { n > 0 ? c / n : nil }

  /// The linearized moments of the ratio (delta method), over N accounts with n̄ = Σn / N, R = Σc / Σn and
  /// lᵢ = (cᵢ − R nᵢ) / n̄: Var(l), Cov(l, x), Var(x) (sample moments, N − 1), the means of x; nil under 2 accounts.
  var moments: Moments? {
    guard accounts >= 2, n > 0 else { return nil }
    let count = Double(accounts)
    let r = c / n
    let meanN = n / count
    let meanX = x / count
    // Sample (co)variances from the sums: S_ab = (Σab − Σa Σb / N) / (N − 1).
    func s(_ ab: Double, _ a: Double, _ b: Double) -> Double { (ab - a * b / count) / (count - 1) }
    let snn = s(nn, n, n)
    let scc = s(cc, c, c)
    let snc = s(nc, n, c)
    let sxx = s(xx, x, x)
    let snx = s(nx, n, x)
    let scx = s(cx, c, x)
    let varL = max(0, (scc - 2 * r * snc + r * r * snn) / (meanN * meanN))
    let covLX = (scx - r * snx) / meanN
    return Moments(accounts: count, rate: r, varL: varL, covLX: covLX, varX: max(0, sxx), meanX: meanX)
  }

  struct Moments {
    var accounts: Double
    var rate: Double
    var varL: Double
    var covLX: Double
    var varX: Double
    var meanX: Double
  }

  /// The rate's standard error across accounts (delta method): √(Var(l) / N); nil under 2 accounts.
  public var standardError: Double? { moments.map { ($0.varL / $0.accounts).squareRoot() } }

  /// The rate with its fixed-horizon interval (clipped to [0, 1]), or "not enough data" under `minimum` accounts.
  public func estimate(minimum: Int) -> RateEstimate {
    guard let rate else { return RateEstimate(rate: nil, accounts: accounts, bounds: nil, notEnoughData: true) }
    guard accounts >= max(2, minimum), let se = standardError else {
      return RateEstimate(rate: rate, accounts: accounts, bounds: nil, notEnoughData: true)
    }
    let half = StatisticsOptions.z * se
    return RateEstimate(
      rate: rate, accounts: accounts, bounds: (max(0, rate - half), min(1, rate + half)), notEnoughData: false)
  }

  /// `a.rate − b.rate` with its intervals, from two independent arms' accounts: d ± z·SE (fixed horizon) and
  /// d ± SE·√((x + 1) / x · log((x + 1) / α²)), x = Nρ² with N the accounts of both arms (always valid), where
  /// SE² = Var(lₐ) / Nₐ + Var(lᵦ) / Nᵦ; with CUPED, d − θ(x̄ₐ − x̄ᵦ) and its smaller SE.
  ///
  /// `family`: the number of comparisons the intervals are corrected for (Bonferroni: each at α / m). Also the
  /// relative difference `a.rate / b.rate − 1` (``RelativeDifference``).
  public static func difference(
    _ a: AccountSample, _ b: AccountSample, options: StatisticsOptions, family: Int = 1
  ) -> Difference {
    var estimate = Difference(
      difference: nil, accounts: a.accounts, againstAccounts: b.accounts, minimumAccounts: options.minimumAccounts)
    estimate.family = max(1, family)
    guard let ra = a.rate, let rb = b.rate else { return estimate }
    estimate.difference = ra - rb
    guard a.accounts >= max(2, options.minimumAccounts), b.accounts >= max(2, options.minimumAccounts),
      let ma = a.moments, let mb = b.moments
    else { return estimate }
    let total = a.accounts + b.accounts
    let z = StatisticsOptions.z(family: family)
    let multiplier = options.alwaysValidMultiplier(accounts: total, family: family)
    let variance = ma.varL / ma.accounts + mb.varL / mb.accounts
    let se = variance.squareRoot()
    estimate.standardError = se
    estimate.fixedHorizon = bounds(ra - rb, se, z)
    estimate.alwaysValid = bounds(ra - rb, se, multiplier)
    if rb > 0 {
      // Delta method on the ratio of two independent means: Var(ra/rb) ≈ Var(ra)/rb² + ra² Var(rb)/rb⁴.
      let varA = ma.varL / ma.accounts
      let varB = mb.varL / mb.accounts
      let relativeSE = (varA / (rb * rb) + ra * ra * varB / (rb * rb * rb * rb)).squareRoot()
      let relative = ra / rb - 1
      estimate.relative = RelativeDifference(
        estimate: relative, standardError: relativeSE, fixedHorizon: bounds(relative, relativeSE, z),
        alwaysValid: bounds(relative, relativeSE, multiplier))
    }
    if options.cuped {
      // θ minimizing Var(d − θ(x̄ₐ − x̄ᵦ)) = Σ (Var(l) − 2θ Cov(l, x) + θ² Var(x)) / N over the two arms.
      let covariance = ma.covLX / ma.accounts + mb.covLX / mb.accounts
      let varianceX = ma.varX / ma.accounts + mb.varX / mb.accounts
      let theta = varianceX > 0 ? covariance / varianceX : 0
      let adjusted = ra - rb - theta * (ma.meanX - mb.meanX)
      let adjustedVariance = max(0, variance - 2 * theta * covariance + theta * theta * varianceX)
      let adjustedSE = adjustedVariance.squareRoot()
      estimate.cuped = CupedEstimate(
        difference: adjusted, standardError: adjustedSE, theta: theta,
        varianceReduction: variance > 0 ? 1 - adjustedVariance / variance : 0,
        fixedHorizon: bounds(adjusted, adjustedSE, z), alwaysValid: bounds(adjusted, adjustedSE, multiplier))
    }
    return estimate
  }

  static func bounds(_ centre: Double, _ se: Double, _ multiplier: Double) -> Interval {
    Interval(low: centre - multiplier * se, high: centre + multiplier * se)
  }
}

/// An interval's bounds.
public struct Interval: Sendable, Hashable {
  public var low: Double
  public var high: Double

  public init(low: Double, high: Double) {
    self.low = low
    self.high = high
  }

  public func contains(_ value: Double) -> Bool { low <= value && value <= high }
}

/// A rate over accounts with its fixed-horizon interval.
public struct RateEstimate: Sendable {
  public var rate: Double?
  public var accounts: Int
  public var bounds: (low: Double, high: Double)?
  /// Fewer accounts than the minimum: no interval (the raw counts are still reported).
  public var notEnoughData: Bool
}

/// The CUPED-adjusted difference: d − θ(x̄ₐ − x̄ᵦ), with its intervals and the variance reduction achieved.
public struct CupedEstimate: Sendable, Hashable {
  public var difference: Double
  public var standardError: Double
  public var theta: Double
  /// 1 − Var(adjusted) / Var(unadjusted).
  public var varianceReduction: Double
  public var fixedHorizon: Interval
  public var alwaysValid: Interval

  public init(
    difference: Double, standardError: Double, theta: Double, varianceReduction: Double, fixedHorizon: Interval,
    alwaysValid: Interval
  ) {
    self.difference = difference
    self.standardError = standardError
    self.theta = theta
    self.varianceReduction = varianceReduction
    self.fixedHorizon = fixedHorizon
    self.alwaysValid = alwaysValid
  }
}
