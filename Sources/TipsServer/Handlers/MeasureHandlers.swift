import TipsEngine
import TipsJSON
import TipsMetrics
import TipsProtocol
import TipsStore

extension Handlers {
  /// The analytics stream, the metrics and the inspector's view.
  static func registerMeasuring(_ table: inout HandlerTable) {
    /// A replay (`after`) starts after this turn's commit (Server.endOfTurn pumps it); hosted mode reads it from
    /// PostgreSQL before the subscription goes live.
    table.onAsync(AnalyticsSubscribeRequest.self) { request, context, answer in
      do throws(ResponseError) { try roomForSubscription(context) } catch { return answer(.failure(error)) }
      // The room is reserved now and given back with the reply: the subscription is made after a read of
      // PostgreSQL, and a batch of these must not all pass the check before any is made.
      context.session.reservedSubscriptions += 1
      let reply = { (result: Result<AnalyticsSubscribeRequest.Response, ResponseError>) in
        context.session.reservedSubscriptions -= 1
        answer(result)
      }
      if context.fleet {
        // An admin's: every account's events, in the fleet's order.
        let hosted: HostedService
        do throws(ResponseError) { hosted = try admin(context) } catch { return reply(.failure(error)) }
        hosted.fleetHead { head in
          let id = hosted.subscribeFleet(session: context.session, after: request.after, head: head ?? 0)
          reply(.success(AnalyticsSubscribeRequest.Response(subscription: id, head: head ?? 0, oldest: nil)))
        }
        return
      }
      let tenant = context.tenant!
      let head = tenant.history.lastCursor
      let mode = context.services.mode
      mode.historyBounds(of: tenant) { bounds in
        switch bounds {
        case .failure(let error):
          reply(.failure(error))
        case .success(let bounds):
          let id = tenant.subscriptions.subscribeAnalytics(session: context.session, after: request.after, head: head)
          if let account = tenant.account { context.session.subscribedAccounts.insert(account) }
          let response = AnalyticsSubscribeRequest.Response(subscription: id, head: head, oldest: bounds.oldestCursor)
          guard let after = request.after else { return reply(.success(response)) }
          mode.replayAnalytics(of: tenant, to: id, after: after) { result in reply(result.map { response }) }
        }
      }
    }

    table.on(AnalyticsUnsubscribeRequest.self) { request, context throws(ResponseError) in
      if context.fleet {
        let hosted = try admin(context)
        guard context.services.subscriptionIDs.isIssued(request.subscription) else {
          throw .unknownSubscription(method: context.method, id: request.subscription)
        }
        return RemovedResult(removed: hosted.unsubscribeFleet(request.subscription, session: context.session))
      }
      return try unsubscribe(request.subscription, kind: .analytics, context)
    }

    table.onAsync(AnalyticsReadRequest.self) { request, context, reply in
      if context.fleet {
        let hosted: HostedService
        do throws(ResponseError) { hosted = try admin(context) } catch { return reply(.failure(error)) }
        hosted.fleetEvents(after: request.after, limit: request.limit) { result in
          hosted.fleetHead { head in
            reply(
              result.map { events in
                AnalyticsReadRequest.Response(
                  events: events, next: events.last?.event.cursor ?? request.after, head: head ?? 0, oldest: nil)
              })
          }
        }
        return
      }
      let tenant = context.tenant!
      let mode = context.services.mode
      mode.readHistory(.streamed(after: request.after, limit: request.limit), of: tenant) { result in
        mode.historyBounds(of: tenant) { bounds in
          reply(
            result.flatMap { events in
              bounds.map { bounds in
                AnalyticsReadRequest.Response(
                  events: events.map { AnalyticsEventInfo($0) }, next: events.last?.cursor ?? request.after,
                  head: bounds.newestCursor, oldest: bounds.oldestCursor)
              }
            })
        }
      }
    }

    table.onAsync(MetricsGetRequest.self) { request, context, reply in
      if context.fleet {
        // An admin's: every account's, pooled. The pool keeps every account's per-account sums, so what the request
        // asks of the statistics (`cuped`) applies to the pooled report.
        let hosted: HostedService
        do throws(ResponseError) { hosted = try admin(context) } catch { return reply(.failure(error)) }
        let statistics = context.services.configuration.metrics(request).statistics
        hosted.fleetMetrics(request) { result in
          let report = result.map { $0.applying(statistics) }
          if case .success(let report) = report { hosted.noticeExperiments(report) }  // webhooks (#48)
          reply(report.map { MetricsGetRequest.Response(report: $0) })
        }
        return
      }
      let tenant: Tenant = context.tenant
      let tips: [MetricsTip]
      do throws(ResponseError) {
        tips = try metricsTips(request, engine: tenant.engine)
      } catch {
        return reply(.failure(error))
      }
      let mode = context.services.mode
      mode.readHistory(.metrics, of: tenant) { result in
        mode.historyBounds(of: tenant) { bounds in
          reply(
            result.flatMap { history in
              bounds.map { bounds in
                MetricsGetRequest.Response(
                  report: Metrics.compute(
                    history: history, tips: tips, configuration: context.services.configuration.metrics(request),
                    since: request.since, until: request.until, now: tenant.engine.clock.now(),
                    historyStart: bounds.oldestAt))
              }
            })
        }
      }
    }

    table.onAsync(InspectStateRequest.self) { request, context, reply in
      context.services.mode.historyBounds(of: context.tenant) { bounds in
        reply(
          Result { () throws(ResponseError) in
            var state = try inspectState(context, bounds: try bounds.get())
            if request.watch {
              state.subscription = context.tenant.subscriptions.watchInspect(session: context.session)
              if let account = context.tenant.account { context.session.subscribedAccounts.insert(account) }
            }
            return InspectStateRequest.Response(state: state)
          })
      }
    }
  }

  /// The tips `metrics/get` reports on (default: every registered tip).
  static func metricsTips(_ request: MetricsGetRequest, engine: Engine) throws(ResponseError) -> [MetricsTip] {
    var tips: [MetricsTip] = []
    for id in request.tips ?? engine.registeredTipIDs {
      guard let definition = engine.definition(of: id) else { throw .unknownTip(id) }
      tips.append(MetricsTip(definition))
    }
    return tips
  }

  /// Everything an inspector shows (`InspectState` in protocol/openrpc.json).
  static func inspectState(_ context: RequestContext, bounds: HistoryBounds) throws(ResponseError) -> InspectState {
    let services = context.services
    let engine = context.engine
    let configuration = services.configuration
    var goalsByEvent: [String: [String]] = [:]
    var tips: [InspectState.Tip] = []
    for state in engine.states() {
      let definition = engine.definition(of: state.id)
      let record = engine.record(of: state.id)
      // A registered tip always has an explanation.
      let explanation = try? engine.explain(state.id)
      let explained = explanation.flatMap { try? ResultReader($0.json, path: "explanation") }
      tips.append(
        InspectState.Tip(
          state: TipStateInfo(state, engine: engine, locale: context.locale),
          rules: explained?.optionalValue("rules")?.arrayValue ?? [],
          heldBy: (try? explained?.decodeArray("heldBy", of: InspectState.Hold.self)) ?? [],
          nextChangeAt: explained?.optionalValue("nextChangeAt")?.doubleValue,
          override: explained?.optionalValue("override")?.stringValue, lines: explanation?.lines ?? [],
          firstDisplayedAt: record.firstDisplayedAt, lastDisplayedAt: record.lastDisplayedAt,
          variants: (definition?.variants ?? []).map(\.name), goal: definition?.goal,
          holdout: engine.isHoldout(state.id), schedule: definition?.schedule))
      if let goal = definition?.goal { goalsByEvent[goal.eventID, default: []].append(state.id) }
    }
    var summaries = engine.eventSummaries
    // Goal and app-closed events no rule reads and nobody donated yet are listed too (with nothing donated).
    var listed = Set(summaries.map(\.id))
    for id in goalsByEvent.keys.sorted() + [configuration.appClosedEvent].compactMap({ $0 }) where !listed.contains(id)
    {
      listed.insert(id)
      summaries.append(EventSummary(id: id, count: 0, lifetime: 0, lastDonation: nil, maxDonations: nil))
    }
    summaries.sort { $0.id < $1.id }
    let events = summaries.map { summary in
      InspectState.Event(
        id: summary.id, count: summary.count, lifetime: summary.lifetime,
        lastDonation: summary.lastDonation.map { ($0.at, $0.info) }, maxDonations: summary.maxDonations,
        maxAge: summary.maxAge, goalOf: goalsByEvent[summary.id] ?? [],
        appClosed: summary.id == configuration.appClosedEvent)
    }
    let parameters = engine.parameterSummaries.map {
      InspectState.Parameter(id: $0.id, value: $0.value, defaultValue: $0.defaultValue, transient: $0.transient)
    }
    var groups: [InspectState.Group] = []
    for id in engine.groupIDs {
      guard let group = engine.group(id) else { continue }
      groups.append(
        InspectState.Group(
          id: id, priority: group.priority.rawValue, tips: group.tipIDs,
          currentTip: (try? engine.currentTip(ofGroup: id)) ?? nil, schedule: group.schedule))
    }
    let overrides = engine.overrideSummary
    return InspectState(
      now: engine.clock.now(), virtualClock: services.virtualClock != nil, testing: configuration.allowTesting,
      displayFrequency: engine.displayFrequency, tips: tips, events: events, parameters: parameters, groups: groups,
      overrides: InspectState.Overrides(
        showAll: overrides.showAll, hideAll: overrides.hideAll, show: overrides.show, hide: overrides.hide),
      history: InspectState.History(
        enabled: context.tenant.history.enabled, days: configuration.historyDays,
        head: context.tenant.history.lastCursor,
        oldest: bounds.oldestCursor, appClosedEvent: configuration.appClosedEvent),
      suppression: engine.currentSuppression)
  }
}

extension ServerConfiguration {
  /// What the metrics read of the configuration.
  var metrics: MetricsConfiguration {
    MetricsConfiguration(
      appClosedEvent: appClosedEvent, closeWindow: closeWindow, closeRateAlert: closeRateAlert,
      baselineDays: baselineDays)
  }

  /// The same with what a `metrics/get` asks of the statistics (`cuped`).
  func metrics(_ request: MetricsGetRequest) -> MetricsConfiguration {
    var configuration = metrics
    configuration.statistics.cuped = request.cuped
    return configuration
  }
}
