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

extension GoalConversion: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      converted: try r.int("converted"), decided: try r.int("decided"), pending: try r.int("pending"),
      rate: try r.optionalDouble("rate"))
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
      rate: try r.optionalDouble("rate"), alert: try r.bool("alert"))
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
      holdout: try r.optionalValue("holdout")?.boolValue ?? false)
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
  }
}

extension Proportion: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(converted: try r.int("converted"), decided: try r.int("decided"))
  }
}

extension Lift: DecodableResult {
  /// The difference and interval are computed from the two proportions, not read.
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      exposed: try r.decode("exposed", as: Proportion.self), holdout: try r.decode("holdout", as: Proportion.self))
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
  }
}
