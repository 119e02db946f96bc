// Issue #46: the experiment's unit, trigger and checks. Every arm is triggered alike — an account enters the first
// time the tip becomes displayable for it (a variant's `eligibility` entry with `shouldDisplay: true`, a holdout's
// counterfactual `exposure`: the same engine event), whether or not the app then draws it — and the primary metric
// is per account: did it do the goal within the goal's window after its first trigger (0/1). Around it: the
// sample-ratio check (Pearson's χ² against the variants' weights), the relative difference (delta method on the
// ratio of means), the Bonferroni correction over a tip's comparisons, and the winsorizing of the secondary
// per-impression rate. docs/measuring.md has the formulas and their references.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One account's decided impressions and conversions (a cell of ``AccountSample/counts``).
public struct AccountCount: Sendable, Hashable {
  public var decided: Int
  public var converted: Int

  public init(decided: Int, converted: Int) {
    self.decided = decided
    self.converted = converted
  }
}

/// The winsorizing caps of a per-impression comparison: each account's decided impressions and conversions at most
/// these (the `quantile` of the accounts of both arms).
public struct Cap: Sendable, Hashable {
  public var quantile: Double
  public var decided: Int
  public var converted: Int

  public init(quantile: Double, decided: Int, converted: Int) {
    self.quantile = quantile
    self.decided = decided
    self.converted = converted
  }
}

/// `a / b − 1` (a fraction: 0.25 is +25%) with its standard error by the delta method and both kinds of interval,
/// corrected like the difference it belongs to.
public struct RelativeDifference: Sendable, Hashable {
  public var estimate: Double
  public var standardError: Double
  public var fixedHorizon: Interval
  public var alwaysValid: Interval

  public init(estimate: Double, standardError: Double, fixedHorizon: Interval, alwaysValid: Interval) {
    self.estimate = estimate
    self.standardError = standardError
    self.fixedHorizon = fixedHorizon
    self.alwaysValid = alwaysValid
  }
}

/// The sample-ratio check: triggered accounts per variant against the variants' weights. Pearson's χ² without
/// continuity correction, k − 1 degrees of freedom; flagged at p < ``SampleRatio/threshold``: the assignment or the
/// trigger is broken, and no difference between the arms can be trusted.
public struct SampleRatio: Sendable, Hashable {
  /// p below this flags the experiment.
  public static let threshold = 0.001

  /// The variants, in order.
  public var names: [String]
  /// Triggered accounts per variant.
  public var observed: [String: Int]
  /// What the weights expect of the same total.
  public var expected: [String: Double]
  public var chiSquare: Double
  public var degreesOfFreedom: Int
  public var pValue: Double
  public var flagged: Bool

  public init(
    names: [String], observed: [String: Int], expected: [String: Double], chiSquare: Double, degreesOfFreedom: Int,
    pValue: Double, flagged: Bool
  ) {
    self.names = names
    self.observed = observed
    self.expected = expected
    self.chiSquare = chiSquare
    self.degreesOfFreedom = degreesOfFreedom
    self.pValue = pValue
    self.flagged = flagged
  }

  /// nil without two variants or without a triggered account.
  public init?(observed: [(name: String, count: Int)], weights: [String: Double]) {
    let total = observed.reduce(0) { $0 + $1.count }
    let shares = observed.map { max(0, weights[$0.name] ?? 1) }
    let sum = shares.reduce(0, +)
    guard observed.count >= 2, total > 0, sum > 0 else { return nil }
    var chi = 0.0
    var expected: [String: Double] = [:]
    for (index, arm) in observed.enumerated() {
      let e = Double(total) * shares[index] / sum
      expected[arm.name] = e
      if e > 0 {
        chi += (Double(arm.count) - e) * (Double(arm.count) - e) / e
      } else if arm.count > 0 {
        chi = .infinity
      }
    }
    names = observed.map(\.name)
    self.observed = Dictionary(observed.map { ($0.name, $0.count) }, uniquingKeysWith: +)
    self.expected = expected
    chiSquare = chi
    degreesOfFreedom = observed.count - 1
    pValue = chi.isFinite ? chiSquareSurvival(chi, degreesOfFreedom: degreesOfFreedom) : 0
    flagged = pValue < Self.threshold
  }
}

/// An arm's accounts by the primary metric: triggered in the period, and of those, the ones whose goal window has
/// closed (`decided`) and the ones that did the goal in it (`converted`); `pending`: window still open, no goal yet.
public struct AccountConversion: Sendable, Hashable {
  public var triggered: Int
  public var converted: Int
  public var decided: Int
  public var pending: Int
  /// The rate's fixed-horizon interval (nil under the minimum).
  public var interval: Interval?
  /// Each decided account as one unit: decided 1, converted 0 or 1, its covariate (goal donations in the baseline
  /// days before its trigger). Not in results; not compared.
  public internal(set) var sample: AccountSample

  public init(triggered: Int, converted: Int, decided: Int, pending: Int, interval: Interval? = nil) {
    self.triggered = triggered
    self.converted = converted
    self.decided = decided
    self.pending = pending
    self.interval = interval
    sample = AccountSample()
  }

  init(sample: AccountSample, triggered: Int, pending: Int) {
    self.init(
      triggered: triggered, converted: Int(sample.c.rounded()), decided: sample.accounts, pending: pending)
    self.sample = sample
  }

  /// No account.
  public static let none = AccountConversion(triggered: 0, converted: 0, decided: 0, pending: 0)

  /// `converted / decided`; nil when nothing is decided.
  public var rate: Double? { decided > 0 ? Double(converted) / Double(decided) : nil }

  /// With the interval its accounts support under `options`.
  func estimated(_ options: StatisticsOptions) -> AccountConversion {
    var out = self
    out.interval = sample.estimate(minimum: options.minimumAccounts).bounds.map { Interval(low: $0.low, high: $0.high) }
    return out
  }

  public static func + (a: AccountConversion, b: AccountConversion) -> AccountConversion {
    var sum = a
    sum += b
    return sum
  }

  public static func += (a: inout AccountConversion, b: AccountConversion) {
    a.triggered += b.triggered
    a.converted += b.converted
    a.decided += b.decided
    a.pending += b.pending
    a.sample += b.sample
    a.interval = nil
  }

  /// The counts (the interval follows from them and the options).
  public static func == (a: AccountConversion, b: AccountConversion) -> Bool {
    a.triggered == b.triggered && a.converted == b.converted && a.decided == b.decided && a.pending == b.pending
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(triggered)
    hasher.combine(converted)
    hasher.combine(decided)
  }
}

/// The secondary comparison: goal conversions per impression (last touch, the tip arm's real impressions against
/// the holdout's counterfactual ones, or a variant's against the control's), each account's counts winsorized
/// (``Cap``). Secondary: the arms count impressions differently (an app may draw a tip several times per
/// displayability, a holdout's counterfactual impression is one per displayability), so it is biased as a lift.
public struct ImpressionDifference: Sendable, Hashable {
  /// Uncapped counts (as `goal` of the variants reports them).
  public var rate: Proportion
  public var againstRate: Proportion
  public var cap: Cap?
  /// The capped rates' difference, the account the unit, corrected like the primary one.
  public var estimate: Difference

  public init(rate: Proportion, againstRate: Proportion, cap: Cap?, estimate: Difference) {
    self.rate = rate
    self.againstRate = againstRate
    self.cap = cap
    self.estimate = estimate
  }

  init(_ a: Proportion, _ b: Proportion, options: StatisticsOptions, family: Int) {
    let (ca, cb, cap) = AccountSample.capped(a.sample, b.sample, quantile: options.capQuantile)
    var plain = options
    plain.cuped = false
    self.init(
      rate: a, againstRate: b, cap: a.sample.accounts + b.sample.accounts > 0 ? cap : nil,
      estimate: AccountSample.difference(ca, cb, options: plain, family: family))
  }
}

// MARK: - Distributions

/// Φ⁻¹(p): Acklam's rational approximation refined by one Halley step on erfc (about 1e-15 relative).
public func normalQuantile(_ p: Double) -> Double {
  guard p > 0, p < 1 else { return p <= 0 ? -.infinity : .infinity }
  let a = [
    -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
    -3.066479806614716e+01, 2.506628277459239e+00,
  ]
  let b = [
    -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
    -1.328068155288572e+01,
  ]
  let c = [
    -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
    4.374664141464968e+00, 2.938163982698783e+00,
  ]
  let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
  let low = 0.02425
  var x: Double
  if p < low {
    let q = (-2 * log(p)).squareRoot()
    x =
      (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
      / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
  } else if p <= 1 - low {
    let q = p - 0.5
    let r = q * q
    x =
      (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
      / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
  } else {
    let q = (-2 * log(1 - p)).squareRoot()
    x =
      -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
      / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
  }
  let e = 0.5 * erfc(-x / 2.0.squareRoot()) - p
  let u = e * (2 * Double.pi).squareRoot() * exp(x * x / 2)
  return x - u / (1 + x * u / 2)
}

/// P(χ²ₖ ≥ x): the regularized upper incomplete gamma Q(k/2, x/2) (series below a + 1, continued fraction above;
/// Numerical Recipes' gammp/gammq).
public func chiSquareSurvival(_ x: Double, degreesOfFreedom k: Int) -> Double {
  guard x > 0, k > 0 else { return 1 }
  let a = Double(k) / 2
  let y = x / 2
  let front = exp(-y + a * log(y) - lgamma(a))
  if y < a + 1 {
    var sum = 1 / a
    var term = sum
    var n = a
    for _ in 0..<10_000 {
      n += 1
      term *= y / n
      sum += term
      if abs(term) < abs(sum) * 1e-16 { break }
    }
    return max(0, 1 - sum * front)
  }
  let tiny = 1e-300
  var b = y + 1 - a
  var c = 1 / tiny
  var d = 1 / b
  var h = d
  for i in 1..<10_000 {
    let an = -Double(i) * (Double(i) - a)
    b += 2
    d = an * d + b
    if abs(d) < tiny { d = tiny }
    c = b + an / c
    if abs(c) < tiny { c = tiny }
    d = 1 / d
    let delta = d * c
    h *= delta
    if abs(delta - 1) < 1e-16 { break }
  }
  return min(1, front * h)
}
