import TipsEngine
import TipsProtocol

extension Handlers {
  /// Display frequency, tips, groups and parameters.
  static func registerDefinitions(_ table: inout HandlerTable) {
    table.on(ConfigureRequest.self) { request, context throws(ResponseError) in
      context.record(context.engine.configure(displayFrequency: request.displayFrequency))
      return ConfigureRequest.Response(displayFrequency: request.displayFrequency)
    }

    table.on(RegisterTipsRequest.self) { request, context throws(ResponseError) in
      context.record(try context.engine { engine throws(EngineError) in try engine.register(request.tips) })
      context.tenant.history.refreshTrackedEvents(context.engine)
      var states: [TipStateInfo] = []
      for tip in request.tips { states.append(try context.tipState(tip.id)) }
      return TipStatesResult(tips: states)
    }

    table.on(InstantiateRequest.self) { request, context throws(ResponseError) in
      guard let catalog = context.services.catalog else {
        throw .invalidParams("tips/instantiate: this daemon serves no catalog, so it has no templates (--catalog FILE)")
      }
      let tip = try catalog.instantiate(request.template, values: request.values)
      context.record(try context.engine { engine throws(EngineError) in try engine.register([tip]) })
      return try context.tipState(tip.id)
    }

    table.on(UnregisterTipsRequest.self) { request, context throws(ResponseError) in
      let known = request.ids.filter { context.engine.definition(of: $0) != nil }
      context.record(context.engine.unregister(request.ids))
      context.tenant.history.refreshTrackedEvents(context.engine)
      return IdsResult(ids: known)
    }

    table.on(RegisterGroupRequest.self) { request, context throws(ResponseError) in
      context.record(try context.engine { engine throws(EngineError) in try engine.registerGroup(request.group) })
      let current = try context.engine { engine throws(EngineError) in try engine.currentTip(ofGroup: request.group.id)
      }
      return RegisterGroupRequest.Response(id: request.group.id, currentTip: current)
    }

    table.on(UnregisterGroupRequest.self) { request, context throws(ResponseError) in
      context.record(try context.engine { engine throws(EngineError) in try engine.unregisterGroup(request.id) })
      return NullResult()
    }

    table.on(DefineParametersRequest.self) { request, context throws(ResponseError) in
      context.record(
        try context.engine { engine throws(EngineError) in try engine.defineParameters(request.parameters) })
      return IdsResult(ids: request.parameters.map(\.id))
    }

    table.on(SetParameterRequest.self) { request, context throws(ResponseError) in
      context.record(
        try context.engine { engine throws(EngineError) in try engine.setParameter(request.id, request.value) })
      return SetParameterRequest.Response(id: request.id, value: context.engine.parameterValue(request.id))
    }
  }

  /// Donations and their bounds.
  static func registerEvents(_ table: inout HandlerTable) {
    table.on(DonateRequest.self) { request, context throws(ResponseError) in
      let services = context.services
      if services.configuration.strictEvents, let catalog = services.catalog, let declared = catalog.declaredEvents,
        !declared.contains(request.id)
      {
        let hint = catalog.nearestDeclaredEvent(to: request.id).map { " (did you mean \"\($0)\"?)" } ?? ""
        throw ResponseError(
          code: .invalidParams,
          message:
            "events/donate: params.id \"\(request.id)\" is not an event the catalog declares\(hint); declare it in the "
            + "catalog's events (the daemon runs with --strict-events)",
          data: ["id": .string(request.id)])
      }
      if let refusal = services.mode.donationRefusal(
        context.tenant, info: request.info, method: DonateRequest.method, on: context.session)
      {
        throw refusal
      }
      let (count, lifetime, mutation) = try context.engine { engine throws(EngineError) in
        try engine.donate(request.id, info: request.info)
      }
      context.record(mutation)
      return DonateRequest.Response(count: count, lifetime: lifetime)
    }

    table.on(ConfigureEventRequest.self) { request, context throws(ResponseError) in
      if let limit = request.maxDonations {
        context.record(
          try context.engine { engine throws(EngineError) in try engine.setDonationLimit(request.id, limit) })
      }
      if let maxAge = request.maxAge {
        context.record(
          try context.engine { engine throws(EngineError) in try engine.setDonationMaxAge(request.id, maxAge) })
      }
      let engine = context.engine
      return ConfigureEventRequest.Response(
        id: request.id, maxDonations: engine.configuredDonationLimit(request.id),
        maxAge: engine.donationMaxAge(request.id))
    }
  }
}
