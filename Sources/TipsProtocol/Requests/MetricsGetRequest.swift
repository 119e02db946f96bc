public import TipsJSON
public import TipsMetrics

/// `metrics/get`: seed 000's metrics per tip and per variant over a period, with their sample sizes (definitions
/// in protocol/README.md, "Metrics").
public struct MetricsGetRequest: EncodableRequest, Hashable {
  public static let method = "metrics/get"
  public static let traits: MethodTraits = MethodTraits(scope: .fleetWide)
  public static let params: [ParamSpec] = [
    .optional("since"), .optional("until"), .optional("tips"), .optional("cuped"),
  ]

  /// Impressions at or after this instant (seconds since the epoch); nil: all kept.
  public var since: Double?
  /// Impressions before this instant; nil: up to now.
  public var until: Double?
  /// These tips only (in this order); nil: every registered tip.
  public var tips: [String]?
  /// CUPED: lift and comparisons also adjusted for each account's goal donations before its first trigger.
  public var cuped: Bool

  public init(since: Double? = nil, until: Double? = nil, tips: [String]? = nil, cuped: Bool = false) {
    self.since = since
    self.until = until
    self.tips = tips
    self.cuped = cuped
  }

  /// The params a client sends.
  public var encodedParams: JSONValue? {
    var params: JSONObject = [:]
    if let since { params["since"] = .double(since) }
    if let until { params["until"] = .double(until) }
    if let tips { params["tips"] = .array(tips.map { .string($0) }) }
    if cuped { params["cuped"] = true }
    return .object(params)
  }

  public init(from p: Params) throws(ResponseError) {
    since = try p.optionalDouble("since")
    until = try p.optionalDouble("until")
    tips = try p.optionalStringArray("tips")
    cuped = try p.optionalBool("cuped") ?? false
    if let since, let until, until < since { throw p.invalid("until", "must not be before since") }
  }

  /// The report (computed by `TipsMetrics`).
  public struct Response: ResultValue, Hashable, DecodableResult {
    public var report: MetricsReport
    public init(report: MetricsReport) { self.report = report }
    public init(from r: ResultReader) throws(ResultDecodingError) { report = try MetricsReport(from: r) }
    public static let shape = ResultShape.object(
      ObjectShape(
        [
          "now", "since", "until", "appClosedEvent", "closeWindow", "closeRateAlert", "baselineDays", "historyStart",
          "tips", "accounts", "method",
        ], optional: ["accounts"]), schema: "Metrics")
    public func write(to writer: inout JSONWriter) { writer.write(report.json) }
  }
}
