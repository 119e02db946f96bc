import TipsEngine
import TipsProtocol

extension Handlers {
  /// Status changes, impressions, actions, status and explanations.
  static func registerStatus(_ table: inout HandlerTable) {
    table.on(InvalidateRequest.self) { request, context throws(ResponseError) in
      context.record(
        try context.engine { engine throws(EngineError) in try engine.invalidate(request.id, reason: request.reason) })
      return try context.tipState(request.id)
    }

    table.on(ResetEligibilityRequest.self) { request, context throws(ResponseError) in
      context.record(try context.engine { engine throws(EngineError) in try engine.resetEligibility(request.id) })
      return try context.tipState(request.id)
    }

    /// Records the impression (at the call's instant, with its duration and the variant shown) before what it
    /// causes (a budget's invalidation).
    table.on(DisplayedRequest.self) { request, context throws(ResponseError) in
      let variant = context.engine.variant(of: request.id)
      let mutation = try context.engine { engine throws(EngineError) in
        try engine.recordDisplay(request.id, duration: request.duration)
      }
      let at = context.engine.record(of: request.id).lastDisplayedAt ?? context.engine.clock.now()
      context.record(
        mutation, history: [.impression(tip: request.id, variant: variant, at: at, duration: request.duration)])
      return try context.tipState(request.id)
    }

    table.on(SuppressRequest.self) { request, context throws(ResponseError) in
      context.record(
        try context.engine { engine throws(EngineError) in
          try engine.suppress(seconds: request.seconds, reason: request.reason)
        })
      return SuppressionResult(context.engine.currentSuppression)
    }

    table.on(ResumeRequest.self) { _, context throws(ResponseError) in
      context.record(context.engine.resume())
      return SuppressionResult(context.engine.currentSuppression)
    }

    table.on(StatusRequest.self) { request, context throws(ResponseError) in
      let engine = context.engine
      for id in request.ids ?? [] where engine.definition(of: id) == nil { throw .unknownTip(id) }
      return TipStatesResult(
        tips: engine.states(request.ids).map { TipStateInfo($0, engine: engine, locale: context.locale) })
    }

    table.on(ExplainRequest.self) { request, context throws(ResponseError) in
      let explanation = try context.engine { engine throws(EngineError) in try engine.explain(request.id) }
      return ExplainRequest.Response(explanation: explanation.json.objectValue ?? [:], lines: explanation.lines)
    }

    table.on(SetVariantRequest.self) { request, context throws(ResponseError) in
      context.record(
        try context.engine { engine throws(EngineError) in try engine.setVariant(request.id, request.variant) })
      return try context.tipState(request.id)
    }

    /// Records an action, invalidates the tip (unless the action or the request says `invalidate: false`) and tells
    /// every action subscriber. The actions are those of the variant this install sees.
    table.on(PerformActionRequest.self) { request, context throws(ResponseError) in
      guard let base = context.engine.definition(of: request.id) else { throw .unknownTip(request.id) }
      let definition = base.withVariant(context.engine.variant(of: request.id))
      guard let index = definition.actions.firstIndex(where: { $0.id == request.actionID }) else {
        var known: [String] = []
        for action in definition.actions { known.append(action.id) }
        throw .unknownAction(request.actionID, tip: request.id, known: known)
      }
      let action = HistoryEvent.action(
        tip: request.id, variant: context.engine.variant(of: request.id), at: context.engine.clock.now(),
        id: request.actionID, index: index)
      if request.invalidate ?? definition.actions[index].invalidates {
        context.record(
          try context.engine { engine throws(EngineError) in try engine.invalidate(request.id, reason: .actionPerformed)
          },
          history: [action])
      } else {
        context.record(.none, history: [action])
      }
      let services = context.services
      for (session, note) in context.tenant.subscriptions.actionNotifications(tip: definition, actionIndex: index) {
        services.stage(.notification(note), on: session)
      }
      return try context.tipState(request.id)
    }
  }
}
