import TipsEngine
import TipsJSON
import TipsMetrics
import TipsProtocol
import TipsStore

extension Handlers {
  /// The analytics stream, the metrics and the inspector's view.
  static func registerMeasuring(_ table: inout HandlerTable) {
    table.on(AnalyticsSubscribeRequest.self) { request, context throws(ResponseError) in
      let services = context.services
      let bounds = try historyBounds(context)
      let head = services.history.lastCursor
      let id = services.subscriptions.subscribeAnalytics(session: context.session, after: request.after, head: head)
      // The replay starts after this turn's commit (Server.endOfTurn pumps it).
      if request.after != nil { services.requestEndOfTurn() }
      return AnalyticsSubscribeRequest.Response(subscription: id, head: head, oldest: bounds.oldestCursor)
    }

    table.on(AnalyticsUnsubscribeRequest.self) { request, context throws(ResponseError) in
      try unsubscribe(request.subscription, kind: .analytics, context)
    }

    table.on(AnalyticsReadRequest.self) { request, context throws(ResponseError) in
      let store = context.services.store
      let events: [HistoryEvent]
      do {
        events = try store.history(after: request.after, limit: request.limit)
      } catch {
        throw .datastoreFailure(path: store.path)
      }
      let bounds = try historyBounds(context)
      return AnalyticsReadRequest.Response(
        events: events.map(AnalyticsEventInfo.init), next: events.last?.cursor ?? request.after,
        head: bounds.newestCursor, oldest: bounds.oldestCursor)
    }

    table.on(MetricsGetRequest.self) { request, context throws(ResponseError) in
      MetricsGetRequest.Response(report: try metricsReport(request, context).json)
    }

    table.on(InspectStateRequest.self) { request, context throws(ResponseError) in
      var state = try inspectState(context)
      if request.watch {
        state["subscription"] = .string(context.services.subscriptions.watchInspect(session: context.session))
      }
      return InspectStateRequest.Response(state: .object(state))
    }
  }

  static func historyBounds(_ context: RequestContext) throws(ResponseError) -> HistoryBounds {
    do {
      return try context.services.store.historyBounds()
    } catch {
      throw .datastoreFailure(path: context.services.store.path)
    }
  }

  /// The metrics of the requested (default: every registered) tips.
  static func metricsReport(_ request: MetricsGetRequest, _ context: RequestContext) throws(ResponseError)
    -> MetricsReport
  {
    let engine = context.engine
    var tips: [MetricsTip] = []
    for id in request.tips ?? engine.registeredTipIDs {
      guard let definition = engine.definition(of: id) else { throw .unknownTip(id) }
      tips.append(MetricsTip(definition))
    }
    let store = context.services.store
    let history: [HistoryEvent]
    let bounds: HistoryBounds
    do {
      history = try store.historyForMetrics()
      bounds = try store.historyBounds()
    } catch {
      throw .datastoreFailure(path: store.path)
    }
    return Metrics.compute(
      history: history, tips: tips, configuration: context.services.configuration.metrics, since: request.since,
      until: request.until, now: engine.clock.now(), historyStart: bounds.oldestAt)
  }

  /// Everything an inspector shows, as one object (described by `InspectState` in protocol/openrpc.json).
  static func inspectState(_ context: RequestContext) throws(ResponseError) -> JSONObject {
    let services = context.services
    let engine = context.engine
    let configuration = services.configuration
    var goalsByEvent: [String: [String]] = [:]
    var tips: [JSONValue] = []
    for state in engine.states() {
      var tip = TipStateInfo(state, engine: engine, locale: context.locale).json.objectValue ?? [:]
      let definition = engine.definition(of: state.id)
      let record = engine.record(of: state.id)
      if let explanation = try? engine.explain(state.id), let object = explanation.json.objectValue {
        tip["rules"] = object["rules"] ?? .array([])
        tip["heldBy"] = object["heldBy"] ?? .array([])
        tip["nextChangeAt"] = object["nextChangeAt"] ?? .null
        if let override = object["override"] { tip["override"] = override }
        tip["lines"] = .array(explanation.lines.map { .string($0) })
      }
      tip["firstDisplayedAt"] = record.firstDisplayedAt.map { .double($0) } ?? .null
      tip["lastDisplayedAt"] = record.lastDisplayedAt.map { .double($0) } ?? .null
      tip["variants"] = .array((definition?.variants ?? []).map { .string($0.name) })
      tip["holdout"] = .bool(engine.isHoldout(state.id))
      tip["schedule"] = definition?.schedule?.json ?? .null
      tip["goal"] = definition?.goal?.json ?? .null
      if let goal = definition?.goal { goalsByEvent[goal.eventID, default: []].append(state.id) }
      tips.append(.object(tip))
    }
    var events: [JSONValue] = []
    var summaries = engine.eventSummaries
    // Goal and app-closed events no rule reads and nobody donated yet are listed too (with nothing donated).
    var listed = Set(summaries.map(\.id))
    for id in goalsByEvent.keys.sorted() + [configuration.appClosedEvent].compactMap({ $0 }) where !listed.contains(id) {
      listed.insert(id)
      summaries.append(EventSummary(id: id, count: 0, lifetime: 0, lastDonation: nil, maxDonations: nil))
    }
    summaries.sort { $0.id < $1.id }
    for summary in summaries {
      var event: JSONObject = [
        "id": .string(summary.id), "count": .int(Int64(summary.count)), "lifetime": .int(Int64(summary.lifetime)),
      ]
      if let last = summary.lastDonation {
        var donation: JSONObject = ["at": .double(last.at)]
        if let info = last.info { donation["info"] = .object(info) }
        event["lastDonation"] = .object(donation)
      } else {
        event["lastDonation"] = .null
      }
      event["maxDonations"] = summary.maxDonations.map { .int(Int64($0)) } ?? .null
      event["maxAge"] = summary.maxAge.map(EventRule.durationJSON) ?? .null
      event["goalOf"] = .array((goalsByEvent[summary.id] ?? []).map { .string($0) })
      event["appClosed"] = .bool(summary.id == configuration.appClosedEvent)
      events.append(.object(event))
    }
    let parameters: [JSONValue] = engine.parameterSummaries.map { parameter in
      [
        "id": .string(parameter.id), "value": parameter.value, "default": parameter.defaultValue,
        "transient": .bool(parameter.transient),
      ]
    }
    var groups: [JSONValue] = []
    for id in engine.groupIDs {
      guard let group = engine.group(id) else { continue }
      let current = (try? engine.currentTip(ofGroup: id)) ?? nil
      groups.append([
        "id": .string(id), "priority": .string(group.priority.rawValue),
        "tips": .array(group.tipIDs.map { .string($0) }), "currentTip": current.map { .string($0) } ?? .null,
        "schedule": group.schedule?.json ?? .null,
      ])
    }
    let overrides = engine.overrideSummary
    let bounds = try historyBounds(context)
    return [
      "now": .double(engine.clock.now()),
      "virtualClock": .bool(services.virtualClock != nil),
      "testing": .bool(configuration.allowTesting),
      "displayFrequency": .string(engine.displayFrequency.rawValue),
      "tips": .array(tips),
      "events": .array(events),
      "parameters": .array(parameters),
      "groups": .array(groups),
      "suppression": SuppressionResult(engine.currentSuppression).json,
      "overrides": [
        "showAll": .bool(overrides.showAll), "hideAll": .bool(overrides.hideAll),
        "show": .array(overrides.show.map { .string($0) }), "hide": .array(overrides.hide.map { .string($0) }),
      ],
      "history": [
        "enabled": .bool(services.history.enabled), "days": .double(configuration.historyDays),
        "head": .int(services.history.lastCursor), "oldest": bounds.oldestCursor.map { .int($0) } ?? .null,
        "appClosedEvent": configuration.appClosedEvent.map { .string($0) } ?? .null,
      ],
    ]
  }
}

extension ServerConfiguration {
  /// What the metrics read of the configuration.
  var metrics: MetricsConfiguration {
    MetricsConfiguration(
      appClosedEvent: appClosedEvent, closeWindow: closeWindow, closeRateAlert: closeRateAlert,
      baselineDays: baselineDays)
  }
}
