import TipsEngine
public import TipsJSON

// The report as JSON: `metrics/get`'s result and `tipsd metrics --json` (member names documented in
// protocol/README.md and described in protocol/openrpc.json's `Metrics` schema).

extension MetricsReport {
  public var json: JSONValue {
    var object: JSONObject = [
      "now": number(now), "since": since.map(number) ?? .null, "until": until.map(number) ?? .null,
      "appClosedEvent": configuration.appClosedEvent.map { .string($0) } ?? .null,
      "closeWindow": number(configuration.closeWindow),
      "closeRateAlert": configuration.closeRateAlert.map(number) ?? .null,
      "baselineDays": number(configuration.baselineDays),
      "historyStart": historyStart.map(number) ?? .null,
    ]
    object["tips"] = .array(tips.map(\.json))
    if let accounts { object["accounts"] = .int(Int64(accounts)) }
    object["method"] = configuration.method
    return .object(object)
  }
}

extension MetricsConfiguration {
  /// How the intervals were computed (docs/measuring.md): `metrics/get`'s `method`.
  public var method: JSONValue {
    let options = statistics
    return [
      "unit": "account", "trigger": "firstDisplayable", "metric": "converted", "rate": "deltaMethod",
      "interval": .string(IntervalKind.alwaysValid.rawValue),
      "confidence": number(StatisticsOptions.confidence), "minimumAccounts": .int(Int64(options.minimumAccounts)),
      "alwaysValid": [
        "name": "asymptoticConfidenceSequence", "plannedAccounts": .int(Int64(options.plannedAccounts)),
        "rho": number(options.rho),
      ],
      "cuped": options.cuped ? ["covariate": "goalDonationsBeforeTrigger", "days": number(baselineDays)] : .null,
      "multipleComparisons": ["name": "bonferroni", "family": "tip"],
      "srm": ["test": "pearsonChiSquare", "threshold": number(SampleRatio.threshold)],
      "cap": ["metric": "perImpression", "quantile": number(options.capQuantile)],
      "reference": "docs/measuring.md",
    ]
  }
}

extension TipMetrics {
  public var json: JSONValue {
    var object: JSONObject = ["tipId": .string(tipID), "goal": goal?.json ?? .null, "overall": overall.json]
    object["variants"] = .array(
      variants.map { variant in
        var members: JSONObject = ["variant": .string(variant.name)]
        for (key, value) in variant.metrics.json.objectValue ?? [:] { members[key] = value }
        return .object(members)
      })
    object["comparisons"] = .array(comparisons.map(\.json))
    object["lift"] = lift?.json ?? .null
    return .object(object)
  }
}

extension Proportion {
  public var json: JSONValue {
    ["converted": .int(Int64(converted)), "decided": .int(Int64(decided)), "rate": rate.map(number) ?? .null]
  }
}

extension VariantComparison {
  /// `{variant, against, sample: {variant, against}, …}`, ``Difference``'s members, `perImpression` and `srm`.
  public var json: JSONValue {
    var object: JSONObject = [
      "variant": .string(variant), "against": .string(against), "variantRate": variantRate.json,
      "againstRate": againstRate.json,
    ]
    estimate.write(into: &object, sample: ("variant", "against"))
    object["perImpression"] = perImpression?.json(sample: ("variant", "against")) ?? .null
    object["srm"] = srm?.json ?? .null
    return .object(object)
  }
}

extension AccountConversion {
  /// `{triggered, converted, decided, pending, rate}`.
  public var json: JSONValue {
    [
      "triggered": .int(Int64(triggered)), "converted": .int(Int64(converted)), "decided": .int(Int64(decided)),
      "pending": .int(Int64(pending)), "rate": rate.map(number) ?? .null,
    ]
  }
}

extension SampleRatio {
  /// `{observed, expected, chiSquare, degreesOfFreedom, pValue, flagged}`, observed and expected by variant.
  public var json: JSONValue {
    [
      "observed": .object(JSONObject(names.map { ($0, .int(Int64(observed[$0] ?? 0))) })),
      "expected": .object(JSONObject(names.map { ($0, number(expected[$0] ?? 0)) })),
      "chiSquare": number(chiSquare), "degreesOfFreedom": .int(Int64(degreesOfFreedom)),
      "pValue": .double(pValue), "flagged": .bool(flagged),
    ]
  }
}

extension ImpressionDifference {
  /// The secondary per-impression comparison: ``Difference``'s members, the sides' uncapped rates and the caps.
  func json(sample names: (String, String)) -> JSONValue {
    var object: JSONObject = [
      "metric": "goalConversionPerImpression", "secondary": true, names.0 + "Rate": rate.json,
      names.1 + "Rate": againstRate.json,
    ]
    object["cap"] =
      cap.map {
        [
          "quantile": number($0.quantile), "impressions": .int(Int64($0.decided)),
          "conversions": .int(Int64($0.converted)),
        ]
      } ?? .null
    estimate.write(into: &object, sample: names)
    object.removeValue(forKey: "cuped")
    return .object(object)
  }
}

/// An interval's bounds as `low` and `high` members (null without one).
private func interval(_ bounds: Interval?, into object: inout JSONObject) {
  object["low"] = bounds.map { number($0.low) } ?? .null
  object["high"] = bounds.map { number($0.high) } ?? .null
}

private func bounds(_ interval: Interval?) -> JSONValue {
  interval.map { ["low": number($0.low), "high": number($0.high)] } ?? .null
}

extension Difference {
  /// `difference`; `low`/`high` the always-valid interval (`interval: "alwaysValid"`), `fixedHorizon` `{low, high}`,
  /// `confidence`, `sample` (accounts per side, named by `names`), `notEnoughData`, `standardError` and `cuped`.
  func write(into object: inout JSONObject, sample names: (String, String)) {
    object["difference"] = difference.map(number) ?? .null
    interval(alwaysValid, into: &object)
    object["interval"] = .string(IntervalKind.alwaysValid.rawValue)
    object["fixedHorizon"] = bounds(fixedHorizon)
    object["confidence"] = number(StatisticsOptions.confidence)
    object["sample"] = [
      names.0: .int(Int64(accounts)), names.1: .int(Int64(againstAccounts)), "minimum": .int(Int64(minimumAccounts)),
    ]
    object["notEnoughData"] = .bool(notEnoughData)
    object["standardError"] = standardError.map(number) ?? .null
    object["correction"] = [
      "name": family > 1 ? "bonferroni" : "none", "comparisons": .int(Int64(family)),
      "alpha": number(StatisticsOptions.alpha / Double(family)),
    ]
    object["relative"] =
      relative.map { r in
        [
          "estimate": number(r.estimate), "low": number(r.alwaysValid.low), "high": number(r.alwaysValid.high),
          "fixedHorizon": bounds(r.fixedHorizon), "standardError": number(r.standardError),
        ]
      } ?? .null
    object["cuped"] =
      cuped.map { cuped in
        [
          "difference": number(cuped.difference), "low": number(cuped.alwaysValid.low),
          "high": number(cuped.alwaysValid.high), "fixedHorizon": bounds(cuped.fixedHorizon),
          "standardError": number(cuped.standardError), "theta": number(cuped.theta),
          "varianceReduction": number(cuped.varianceReduction),
        ]
      } ?? .null
  }
}

extension Lift {
  /// `{metric, exposed, holdout, sample: {exposed, holdout}, …}`, ``Difference``'s members, `perImpression` and
  /// `srm`.
  public var json: JSONValue {
    var object: JSONObject = ["metric": "converted", "exposed": exposed.json, "holdout": holdout.json]
    estimate.write(into: &object, sample: ("exposed", "holdout"))
    object["perImpression"] = perImpression?.json(sample: ("exposed", "holdout")) ?? .null
    object["srm"] = srm?.json ?? .null
    return .object(object)
  }
}

extension MetricSet {
  public var json: JSONValue {
    var object: JSONObject = ["impressions": .int(Int64(impressions))]
    object["goal"] =
      goal.map { g in
        var goal: JSONObject = [
          "converted": .int(Int64(g.converted)), "decided": .int(Int64(g.decided)), "pending": .int(Int64(g.pending)),
          "rate": g.rate.map(number) ?? .null,
        ]
        rate(g.interval, accounts: g.accounts, into: &goal)
        return .object(goal)
      } ?? .null
    func time(_ t: TimeToGoal?) -> JSONValue {
      t.map { t in
        ["samples": .int(Int64(t.samples)), "median": t.median.map(number) ?? .null, "open": .int(Int64(t.open))]
      } ?? .null
    }
    object["timeToGoal"] = time(timeToGoal)
    object["timeToGoalPerExposure"] = time(timeToGoalPerExposure)
    object["holdout"] = .bool(holdout)
    object["triggered"] =
      triggered.map { t in
        var members = t.json.objectValue ?? [:]
        rate(t.interval, accounts: t.decided, into: &members)
        return .object(members)
      } ?? .null
    if let close {
      var members: JSONObject = [
        "available": true, "closes": .int(Int64(close.closes)), "decided": .int(Int64(close.decided)),
        "pending": .int(Int64(close.pending)), "rate": close.rate.map(number) ?? .null, "alert": .bool(close.alert),
      ]
      rate(close.interval, accounts: close.accounts, into: &members)
      object["close"] = .object(members)
    } else {
      object["close"] = ["available": false]
    }
    object["goalRate"] =
      goalRate.map { r in
        [
          "firstImpressionAt": r.firstImpressionAt.map(number) ?? .null, "before": r.before?.json ?? .null,
          "after": r.after?.json ?? .null, "change": r.change.map(number) ?? .null,
        ]
      } ?? .null
    return .object(object)
  }
}

/// A rate's fixed-horizon interval across accounts: `low`, `high`, `interval`, `accounts`, `notEnoughData`.
private func rate(_ bounds: Interval?, accounts: Int, into object: inout JSONObject) {
  interval(bounds, into: &object)
  object["interval"] = .string(IntervalKind.fixedHorizon.rawValue)
  object["accounts"] = .int(Int64(accounts))
  object["notEnoughData"] = .bool(bounds == nil)
}

extension RateWindow {
  public var json: JSONValue {
    [
      "from": number(from), "to": number(to), "days": number(days), "count": .int(Int64(count)),
      "perDay": perDay.map(number) ?? .null,
    ]
  }
}

/// A number as JSON: an integer when exact, else a double rounded to microseconds' worth of digits.
func number(_ value: Double) -> JSONValue {
  if let exact = Int64(exactly: value) { return .int(exact) }
  return .double((value * 1_000_000).rounded() / 1_000_000)
}
