import TipsEngine
import TipsProtocol

extension Handlers {
  static func registerSubscriptions(_ table: inout HandlerTable) {
    table.on(ObserveRequest.self) { request, context throws(ResponseError) in
      try roomForSubscription(context)
      let engine = context.engine
      for group in request.groups ?? [] where engine.group(group) == nil { throw .unknownGroup(group) }
      let watched = request.watchedTips
      let states = watched == nil ? engine.states() : engine.states(request.ids ?? [])
      var groups: [GroupCurrentTip] = []
      for group in request.groups ?? [] {
        let current = try context.engine { engine throws(EngineError) in try engine.currentTip(ofGroup: group) }
        groups.append(GroupCurrentTip(group: group, tipID: current))
      }
      let id = context.tenant.subscriptions.observe(
        session: context.session, tipIDs: watched, groups: Set(request.groups ?? []), initial: states)
      if let account = context.tenant.account { context.session.subscribedAccounts.insert(account) }
      var unknown: [String] = []
      for tipID in request.ids ?? [] where engine.definition(of: tipID) == nil && !unknown.contains(tipID) {
        unknown.append(tipID)
      }
      return ObserveRequest.Response(
        subscription: id, tips: states.map { TipStateInfo($0, engine: engine, locale: context.locale) }, groups: groups,
        unknown: unknown)
    }

    table.on(UnobserveRequest.self) { request, context throws(ResponseError) in
      try unsubscribe(request.subscription, kind: .observe, context)
    }

    table.on(SubscribeActionsRequest.self) { request, context throws(ResponseError) in
      try roomForSubscription(context)
      let id = context.tenant.subscriptions.subscribeActions(
        session: context.session, tipIDs: request.tipIDs.map(Set.init))
      if let account = context.tenant.account { context.session.subscribedAccounts.insert(account) }
      return SubscriptionResult(subscription: id)
    }

    table.on(UnsubscribeActionsRequest.self) { request, context throws(ResponseError) in
      try unsubscribe(request.subscription, kind: .actions, context)
    }
  }

  /// A connection holds at most ``Session/maxSubscriptions`` subscriptions: a flood of subscribing requests (or
  /// notifications, which run too) must not grow the daemon's memory and each change's fan-out without end. Those
  /// still being made (``Session/reservedSubscriptions``) count.
  static func roomForSubscription(_ context: RequestContext) throws(ResponseError) {
    let session = context.session
    guard session.subscriptions.count + session.reservedSubscriptions >= Session.maxSubscriptions else { return }
    throw .invalidParams(
      "\(context.method): this connection holds \(Session.maxSubscriptions) subscriptions, the most one may "
        + "(end some with tips/unobserve, actions/unsubscribe or analytics/unsubscribe)")
  }

  /// `tips/unobserve` and `actions/unsubscribe`: removes the connection's own subscription of that kind.
  /// Idempotent for ids this daemon issued (`removed: false` when gone or another connection's); -32003 for others.
  static func unsubscribe(
    _ id: String, kind: SubscriptionRegistry.Kind, _ context: RequestContext
  ) throws(ResponseError) -> RemovedResult {
    let subscriptions = context.tenant.subscriptions
    guard subscriptions.isIssued(id) else { throw .unknownSubscription(method: context.method, id: id) }
    return RemovedResult(removed: subscriptions.unsubscribe(id, kind: kind, session: context.session))
  }
}
