import TipsEngine
import TipsProtocol

extension Handlers {
  /// Testing overrides, datastore reset and the virtual clock.
  static func registerTesting(_ table: inout HandlerTable) {
    table.on(ShowAllTipsRequest.self) { _, context throws(ResponseError) in setOverride(.showAll, context) }
    table.on(HideAllTipsRequest.self) { _, context throws(ResponseError) in setOverride(.hideAll, context) }
    table.on(ShowTipsRequest.self) { request, context throws(ResponseError) in setOverride(.show(request.ids), context)
    }
    table.on(HideTipsRequest.self) { request, context throws(ResponseError) in setOverride(.hide(request.ids), context)
    }
    table.on(ClearTestingOverridesRequest.self) { _, context throws(ResponseError) in setOverride(.clear, context) }

    table.on(ResetDatastoreRequest.self) { _, context throws(ResponseError) in
      context.record(context.engine.reset())
      return NullResult()
    }

    table.on(ClockNowRequest.self) { _, context throws(ResponseError) in
      ClockNowRequest.Response(now: context.engine.clock.now(), virtual: context.services.virtualClock != nil)
    }

    table.on(ClockAdvanceRequest.self) { request, context throws(ResponseError) in
      let clock = try virtualClock(context)
      clock.advance(by: request.seconds)
      recordTime(context)
      return NowResult(now: clock.now())
    }

    table.on(ClockSetRequest.self) { request, context throws(ResponseError) in
      let clock = try virtualClock(context)
      clock.set(request.now)
      recordTime(context)
      return NowResult(now: clock.now())
    }
  }

  /// Time moved: each time-driven change is recorded (notified, stored, written to the history) at its own instant,
  /// in order, as the real clock would have.
  static func recordTime(_ context: RequestContext) {
    for step in context.engine.advanceTimeInSteps() { context.record(step) }
  }

  static func setOverride(_ override: TestingOverride, _ context: RequestContext) -> NullResult {
    context.record(context.engine.setTestingOverride(override))
    return NullResult()
  }

  static func virtualClock(_ context: RequestContext) throws(ResponseError) -> VirtualClock {
    guard let clock = context.services.virtualClock else { throw .virtualClockDisabled(method: context.method) }
    return clock
  }
}
