public import TipsEngine
public import TipsJSON
public import TipsMetrics

// `metrics/get`'s result read back (`tipsd metrics`, `tipsd report`, the tests): the `Metrics` schema of
// protocol/openrpc.json, written by `TipsMetrics` (`MetricsReport.json`).

extension TipGoal {
  /// A goal in a result (`{event, within}`).
  init(from r: ResultReader) throws(ResultDecodingError) {
    do {
      self = try TipGoal(json: .object(r.object), path: r.path)
    } catch {
      throw ResultDecodingError("\(error)")
    }
  }

  static func optional(_ key: String, in r: ResultReader) throws(ResultDecodingError) -> TipGoal? {
    guard let reader = try r.optionalNested(key) else { return nil }
    return try TipGoal(from: reader)
  }
}

extension Interval {
  /// `low` and `high` members of `r`; nil when either is null or absent.
  static func optional(in r: ResultReader) throws(ResultDecodingError) -> Interval? {
    guard let low = try r.optionalDouble("low"), let high = try r.optionalDouble("high") else { return nil }
    return Interval(low: low, high: high)
  }

  /// A nested `{low, high}`; nil when null or absent.
  static func optional(_ key: String, in r: ResultReader) throws(ResultDecodingError) -> Interval? {
    guard let nested = try r.optionalNested(key) else { return nil }
    return try optional(in: nested)
  }
}

extension GoalConversion: DecodableResult {
  /// `accounts` is absent from a daemon older than issue #38 (its interval then is Wilson's over impressions).
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      converted: try r.int("converted"), decided: try r.int("decided"), pending: try r.int("pending"),
      rate: try r.optionalDouble("rate"), accounts: try r.optionalInt("accounts"),
      interval: try Interval.optional(in: r))
  }
}

extension TimeToGoal: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(samples: try r.int("samples"), median: try r.optionalDouble("median"), open: try r.int("open"))
  }
}

extension CloseRate: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      closes: try r.int("closes"), decided: try r.int("decided"), pending: try r.int("pending"),
      rate: try r.optionalDouble("rate"), alert: try r.bool("alert"), accounts: try r.optionalInt("accounts"),
      interval: try Interval.optional(in: r))
  }
}

extension RateWindow: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    let (from, to) = (try r.double("from"), try r.double("to"))
    // Across accounts `days` is the accounts' days summed, not the span.
    let days = try r.optionalDouble("days")
    self.init(
      from: from, to: to, count: try r.int("count"),
      accountDays: days.flatMap { abs($0 - max(0, to - from) / 86_400) > 1e-6 ? $0 : nil })
  }
}

extension GoalRateChange: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      firstImpressionAt: try r.optionalDouble("firstImpressionAt"),
      before: try r.decodeIfPresent("before", as: RateWindow.self),
      after: try r.decodeIfPresent("after", as: RateWindow.self))
  }
}

extension MetricSet: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    let close = try r.nested("close")
    self.init(
      impressions: try r.int("impressions"), goal: try r.decodeIfPresent("goal", as: GoalConversion.self),
      timeToGoal: try r.decodeIfPresent("timeToGoal", as: TimeToGoal.self),
      timeToGoalPerExposure: try r.decodeIfPresent("timeToGoalPerExposure", as: TimeToGoal.self),
      close: try close.bool("available") ? try CloseRate(from: close) : nil,
      goalRate: try r.decodeIfPresent("goalRate", as: GoalRateChange.self),
      holdout: try r.optionalValue("holdout")?.boolValue ?? false,
      triggered: try r.decodeIfPresent("triggered", as: AccountConversion.self))
  }
}

extension AccountConversion: DecodableResult {
  /// `{triggered, converted, decided, pending, rate}` and, in a variant's set, its interval.
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      triggered: try r.optionalInt("triggered") ?? 0, converted: try r.int("converted"), decided: try r.int("decided"),
      pending: try r.optionalInt("pending") ?? 0, interval: try Interval.optional(in: r))
  }
}

extension SampleRatio: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    let observed = try r.nested("observed")
    let expected = try r.nested("expected")
    var counts: [String: Int] = [:]
    var shares: [String: Double] = [:]
    for name in observed.object.keys {
      counts[name] = try observed.int(name)
      shares[name] = try expected.optionalDouble(name) ?? 0
    }
    self.init(
      names: observed.object.keys, observed: counts, expected: shares, chiSquare: try r.double("chiSquare"),
      degreesOfFreedom: try r.optionalInt("degreesOfFreedom") ?? max(0, counts.count - 1),
      pValue: try r.double("pValue"), flagged: try r.bool("flagged"))
  }
}

extension TipMetrics: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    var variants: [(name: String, metrics: MetricSet)] = []
    for (index, value) in try r.array("variants").enumerated() {
      let variant = try ResultReader(value, path: "\(r.path).variants[\(index)]")
      variants.append((try variant.string("variant"), try MetricSet(from: variant)))
    }
    self.init(
      tipID: try r.string("tipId"), goal: try TipGoal.optional("goal", in: r),
      overall: try r.decode("overall", as: MetricSet.self), variants: variants)
    lift = try r.decodeIfPresent("lift", as: Lift.self)
    comparisons = []
    for (index, value) in (r.optionalValue("comparisons")?.arrayValue ?? []).enumerated() {
      let reader = try ResultReader(value, path: "\(r.path).comparisons[\(index)]")
      let variant = try reader.string("variant")
      let against = try reader.string("against")
      // The rates are the variants' own, read above.
      let rate = { (name: String) in
        variants.first { $0.name == name }?.metrics.goal?.proportion ?? Proportion(converted: 0, decided: 0)
      }
      comparisons.append(
        VariantComparison(
          variant: variant, against: against, variantRate: rate(variant), againstRate: rate(against),
          estimate: try Difference(from: reader, sample: ("variant", "against")),
          srm: try reader.decodeIfPresent("srm", as: SampleRatio.self)))
    }
  }
}

extension Proportion: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(converted: try r.int("converted"), decided: try r.int("decided"))
  }
}

extension Difference {
  /// A lift's or comparison's estimate as written (``Difference``'s members). From a daemon older than issue #38
  /// (no `interval` member), `low`/`high` were a fixed-horizon interval (Newcombe's, over impressions).
  init(from r: ResultReader, sample names: (String, String)) throws(ResultDecodingError) {
    let sample = try r.optionalNested("sample")
    let bounds = try Interval.optional(in: r)
    let alwaysValid = try r.optionalString("interval") == IntervalKind.alwaysValid.rawValue
    var cuped: CupedEstimate?
    if let c = try r.optionalNested("cuped"), let fixed = try Interval.optional("fixedHorizon", in: c) {
      cuped = CupedEstimate(
        difference: try c.double("difference"), standardError: try c.double("standardError"),
        theta: try c.double("theta"), varianceReduction: try c.double("varianceReduction"), fixedHorizon: fixed,
        alwaysValid: Interval(low: try c.double("low"), high: try c.double("high")))
    }
    self.init(
      difference: try r.optionalDouble("difference"), accounts: try sample?.optionalInt(names.0) ?? 0,
      againstAccounts: try sample?.optionalInt(names.1) ?? 0, minimumAccounts: try sample?.optionalInt("minimum") ?? 0,
      standardError: try r.optionalDouble("standardError"),
      fixedHorizon: alwaysValid ? try Interval.optional("fixedHorizon", in: r) : bounds,
      alwaysValid: alwaysValid ? bounds : nil, cuped: cuped)
    family = try r.optionalNested("correction")?.optionalInt("comparisons") ?? 1
    if let relative = try r.optionalNested("relative"), let fixed = try Interval.optional("fixedHorizon", in: relative)
    {
      self.relative = RelativeDifference(
        estimate: try relative.double("estimate"), standardError: try relative.double("standardError"),
        fixedHorizon: fixed, alwaysValid: Interval(low: try relative.double("low"), high: try relative.double("high")))
    }
  }
}

extension Lift: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      exposed: try r.decode("exposed", as: AccountConversion.self),
      holdout: try r.decode("holdout", as: AccountConversion.self),
      estimate: try Difference(from: r, sample: ("exposed", "holdout")),
      srm: try r.decodeIfPresent("srm", as: SampleRatio.self))
  }
}

extension MetricsReport: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      now: try r.double("now"), since: try r.optionalDouble("since"), until: try r.optionalDouble("until"),
      configuration: MetricsConfiguration(
        appClosedEvent: try r.optionalString("appClosedEvent"), closeWindow: try r.double("closeWindow"),
        closeRateAlert: try r.optionalDouble("closeRateAlert"), baselineDays: try r.double("baselineDays")),
      historyStart: try r.optionalDouble("historyStart"), tips: try r.decodeArray("tips", of: TipMetrics.self))
    accounts = try r.optionalInt("accounts")
    if let method = try r.optionalNested("method") {
      configuration.statistics.minimumAccounts = try method.optionalInt("minimumAccounts") ?? 0
      configuration.statistics.plannedAccounts =
        try method.optionalNested("alwaysValid")?.optionalInt("plannedAccounts") ?? 0
      configuration.statistics.cuped = method.optionalValue("cuped").map { !$0.isNull } ?? false
    }
  }
}
