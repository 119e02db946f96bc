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
    return .object(object)
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
  /// `{variant, against, difference, low, high, confidence}`.
  public var json: JSONValue {
    let result = difference
    return [
      "variant": .string(variant), "against": .string(against),
      "difference": result.map { number($0.difference) } ?? .null, "low": result.map { number($0.low) } ?? .null,
      "high": result.map { number($0.high) } ?? .null, "confidence": 0.95,
    ]
  }
}

/// A 95% interval's bounds as `low` and `high` members (null without a sample).
private func interval(_ bounds: (low: Double, high: Double)?, into object: inout JSONObject) {
  object["low"] = bounds.map { number($0.low) } ?? .null
  object["high"] = bounds.map { number($0.high) } ?? .null
}

extension Lift {
  /// `{exposed, holdout, difference, low, high, confidence}`.
  public var json: JSONValue {
    let bounds = interval
    return [
      "exposed": exposed.json, "holdout": holdout.json, "difference": difference.map(number) ?? .null,
      "low": bounds.map { number($0.low) } ?? .null, "high": bounds.map { number($0.high) } ?? .null,
      "confidence": 0.95,
    ]
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
        interval(g.interval, into: &goal)
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
    if let close {
      var members: JSONObject = [
        "available": true, "closes": .int(Int64(close.closes)), "decided": .int(Int64(close.decided)),
        "pending": .int(Int64(close.pending)), "rate": close.rate.map(number) ?? .null, "alert": .bool(close.alert),
      ]
      interval(close.interval, into: &members)
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
