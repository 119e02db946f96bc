import TipsEngine
import TipsJSON
import TipsProtocol

extension ResponseError {
  /// The protocol error for an engine error, with a message a developer can act on.
  init(_ error: EngineError, method: String) {
    switch error {
    case .unknownTip(let id):
      self.init(
        code: .unknownTip, message: "unknown tip \"\(id)\": register it with tips/register first",
        data: .object(["id": .string(id)]))
    case .unknownGroup(let id):
      self.init(
        code: .unknownGroup, message: "unknown group \"\(id)\": register it with groups/register first",
        data: .object(["id": .string(id)]))
    case .unknownParameter(let id):
      self.init(
        code: .invalidParams,
        message: "\(method): unknown parameter \"\(id)\": declare it with parameters/define first",
        data: .object(["id": .string(id)]))
    case .invalidDefinition(let path, let message):
      self.init(
        code: .invalidParams, message: "\(method): params.\(path): \(message)", data: .object(["path": .string("params.\(path)")]))
    case .parameterTypeMismatch, .invalidArgument:
      self.init(code: .invalidParams, message: "\(method): \(error)")
    }
  }
}

extension Server {
  /// Runs an engine call, mapping its errors to protocol errors.
  func engineCall<T>(_ method: String, _ body: () throws(EngineError) -> T) throws(ResponseError) -> T {
    do {
      return try body()
    } catch {
      throw ResponseError(error, method: method)
    }
  }

  func tipStateJSON(_ id: String) throws(ResponseError) -> JSONValue {
    guard let state = engine.state(of: id) else { throw ResponseError(EngineError.unknownTip(id), method: "") }
    return Encoding.tipState(state, engine: engine, locale: servingLocale)
  }

  // MARK: Lifecycle

  func initialize(_ p: Params, _ session: Session) throws(ResponseError) -> Handled {
    guard session.lifecycle == .uninitialized else {
      throw ResponseError(code: .invalidRequest, message: "initialize: the connection is already initialized")
    }
    let version = try p.string("protocolVersion")
    let major = version.split(separator: ".", maxSplits: 1).first.map(String.init) ?? version
    let ourMajor = TipsdVersion.protocolVersion.split(separator: ".").first.map(String.init) ?? ""
    guard major == ourMajor else {
      throw ResponseError(
        code: .invalidParams,
        message: "initialize: protocolVersion \"\(version)\" is not supported; this daemon speaks \(TipsdVersion.protocolVersion)")
    }
    let clientInfo = try p.object("clientInfo")
    session.clientName = clientInfo["name"]?.stringValue ?? "?"
    session.locale = try p.optionalString("locale")
    session.lifecycle = .running
    logger.debug("client initialized", [("connection", String(session.id)), ("client", session.clientName)])
    return .read(.object([
      "protocolVersion": .string(TipsdVersion.protocolVersion),
      "serverInfo": .object(["name": "tipsd", "version": .string(TipsdVersion.server)]),
      "capabilities": .object([
        "framings": ["newline", "contentLength"],
        "virtualClock": .bool(virtualClock != nil),
        "maxMessageSize": .int(Int64(configuration.maxMessageSize)),
        "notifications": .array(Method.all.filter(Method.serverNotifications.contains).map(JSONValue.string)),
        "methods": .array(Server.answeredMethods.map(JSONValue.string)),
      ]),
    ]))
  }

  // MARK: Definitions

  func configure(_ p: Params) throws(ResponseError) -> Handled {
    let name = try p.string("displayFrequency")
    guard let frequency = DisplayFrequency(rawValue: name) else {
      throw p.invalid(
        "displayFrequency", "must be one of immediate, hourly, daily, weekly, monthly (got \"\(name)\")")
    }
    apply(engine.configure(displayFrequency: frequency))
    return .wrote(.object(["displayFrequency": .string(frequency.rawValue)]))
  }

  func registerTips(_ p: Params) throws(ResponseError) -> Handled {
    let list = try p.array("tips")
    var tips: [TipDefinition] = []
    var seen: Set<String> = []
    for (index, json) in list.enumerated() {
      let tip = try engineCall(p.method) { () throws(EngineError) in try TipDefinition(json: json, path: "tips[\(index)]") }
      guard seen.insert(tip.id).inserted else {
        throw p.invalid("tips[\(index)].id", "duplicate tip id \"\(tip.id)\" in one registration")
      }
      tips.append(tip)
    }
    apply(engine.register(tips))
    return .wrote(.object(["tips": .array(tips.map { Encoding.tipState(engine.state(of: $0.id)!, engine: engine, locale: servingLocale) })]))
  }

  func unregisterTips(_ p: Params) throws(ResponseError) -> Handled {
    let ids = try p.stringArray("ids")
    let known = ids.filter { engine.definition(of: $0) != nil }
    apply(engine.unregister(ids))
    return .wrote(.object(["ids": .array(known.map(JSONValue.string))]))
  }

  func registerGroup(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    let priorityName = try p.string("priority")
    guard let priority = GroupPriority(rawValue: priorityName) else {
      throw p.invalid("priority", "must be \"ordered\" or \"firstAvailable\" (got \"\(priorityName)\")")
    }
    let tips = try p.stringArray("tips")
    guard !id.isEmpty else { throw p.invalid("id", "must not be empty") }
    apply(engine.registerGroup(TipGroupDefinition(id: id, priority: priority, tipIDs: tips)))
    let current = try engineCall(p.method) { () throws(EngineError) in try engine.currentTip(ofGroup: id) }
    return .wrote(.object(["id": .string(id), "currentTip": current.map(JSONValue.string) ?? .null]))
  }

  func unregisterGroup(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    apply(try engineCall(p.method) { () throws(EngineError) in try engine.unregisterGroup(id) })
    return .wrote(.null)
  }

  func defineParameters(_ p: Params) throws(ResponseError) -> Handled {
    let list = try p.array("parameters")
    var definitions: [ParameterDefinition] = []
    for (index, json) in list.enumerated() {
      definitions.append(
        try engineCall(p.method) { () throws(EngineError) in try ParameterDefinition(json: json, path: "parameters[\(index)]") })
    }
    apply(try engineCall(p.method) { () throws(EngineError) in try engine.defineParameters(definitions) })
    return .wrote(.object(["ids": .array(definitions.map { .string($0.id) })]))
  }

  func setParameter(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    let value = try p.value("value")
    apply(try engineCall(p.method) { () throws(EngineError) in try engine.setParameter(id, value) })
    return .wrote(.object(["id": .string(id), "value": engine.parameterValue(id)]))
  }

  // MARK: Events

  func donate(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    guard !id.isEmpty else { throw p.invalid("id", "must not be empty") }
    let info = try p.optionalObject("info")
    if let info {
      for (key, value) in info {
        if case .array = value { throw p.invalid("info.\(key)", "associated values must be flat (no arrays)") }
        if case .object = value { throw p.invalid("info.\(key)", "associated values must be flat (no objects)") }
      }
    }
    let (count, mutation) = engine.donate(id, info: info)
    apply(mutation)
    return .wrote(.object(["count": .int(Int64(count))]))
  }

  func configureEvent(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    let limit = try p.int("maxDonations")
    apply(try engineCall(p.method) { () throws(EngineError) in try engine.setDonationLimit(id, limit) })
    return .wrote(.object(["id": .string(id), "maxDonations": .int(Int64(limit))]))
  }

  // MARK: Status

  func invalidate(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    let reasonName = try p.optionalString("reason") ?? InvalidationReason.tipClosed.rawValue
    guard let reason = InvalidationReason(rawValue: reasonName) else {
      throw p.invalid(
        "reason",
        "must be one of actionPerformed, tipClosed, displayCountExceeded, displayDurationExceeded (got \"\(reasonName)\")")
    }
    apply(try engineCall(p.method) { () throws(EngineError) in try engine.invalidate(id, reason: reason) })
    return .wrote(try tipStateJSON(id))
  }

  func resetEligibility(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    apply(try engineCall(p.method) { () throws(EngineError) in try engine.resetEligibility(id) })
    return .wrote(try tipStateJSON(id))
  }

  func displayed(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    let duration = try p.optionalDouble("duration") ?? 0
    guard duration >= 0, duration.isFinite else { throw p.invalid("duration", "must be a non-negative number of seconds") }
    apply(try engineCall(p.method) { () throws(EngineError) in try engine.recordDisplay(id, duration: duration) })
    return .wrote(try tipStateJSON(id))
  }

  func status(_ p: Params) throws(ResponseError) -> Handled {
    let ids = try p.optionalStringArray("ids")
    if let ids {
      for id in ids where engine.definition(of: id) == nil {
        throw ResponseError(EngineError.unknownTip(id), method: p.method)
      }
    }
    return .read(.object(["tips": .array(engine.states(ids).map { Encoding.tipState($0, engine: engine, locale: servingLocale) })]))
  }

  func explain(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    let explanation = try engineCall(p.method) { () throws(EngineError) in try engine.explain(id) }
    var object = explanation.json.objectValue ?? [:]
    object["lines"] = .array(explanation.lines.map(JSONValue.string))
    return .read(.object(object))
  }

  // MARK: Subscriptions

  func makeSubscriptionID() -> String {
    nextSubscription += 1
    return "sub-\(nextSubscription)"
  }

  func observe(_ p: Params, _ session: Session) throws(ResponseError) -> Handled {
    let ids = try p.optionalStringArray("ids")
    let groups = try p.optionalStringArray("groups")
    for group in groups ?? [] where engine.group(group) == nil {
      throw ResponseError(EngineError.unknownGroup(group), method: p.method)
    }
    // Observing neither ids nor groups means every tip; naming only groups means just those groups.
    let tipIDs: Set<String>? = ids.map(Set.init) ?? (groups == nil ? nil : [])
    let subscription = ObserveSubscription(
      id: makeSubscriptionID(), session: session, tipIDs: tipIDs, groups: Set(groups ?? []))
    observers[subscription.id] = subscription
    session.subscriptions.insert(subscription.id)
    var tips: [JSONValue] = []
    for state in tipIDs == nil ? engine.states() : engine.states(ids ?? []) {
      subscription.given(state.id, state.shouldDisplay)
      tips.append(Encoding.tipState(state, engine: engine, locale: servingLocale))
    }
    var groupStates: [JSONValue] = []
    for group in groups ?? [] {
      let current = try engineCall(p.method) { () throws(EngineError) in try engine.currentTip(ofGroup: group) }
      groupStates.append(.object(["group": .string(group), "tipId": current.map(JSONValue.string) ?? .null]))
    }
    return .read(.object([
      "subscription": .string(subscription.id), "tips": .array(tips), "groups": .array(groupStates),
    ]))
  }

  /// Throws -32003 for an id this daemon never issued (a typo, or an id from another daemon run); an issued id
  /// that is already gone is fine (unsubscribing is idempotent).
  func checkIssued(_ id: String, _ method: String) throws(ResponseError) {
    guard id.hasPrefix("sub-"), let number = Int(id.dropFirst(4)), number >= 1, number <= nextSubscription else {
      throw ResponseError(
        code: .unknownSubscription,
        message: "\(method): unknown subscription \"\(id)\": use the id returned by tips/observe or actions/subscribe",
        data: .object(["subscription": .string(id)]))
    }
  }

  func unobserve(_ p: Params, _ session: Session) throws(ResponseError) -> Handled {
    try unsubscribe(p, session, from: \.observers)
  }

  /// `tips/unobserve` and `actions/unsubscribe`: removes the connection's own subscription of that kind.
  /// Idempotent: an issued id that is already gone (or another connection's) answers `removed: false`.
  func unsubscribe<S: OwnedSubscription>(
    _ p: Params, _ session: Session, from table: ReferenceWritableKeyPath<Server, [String: S]>
  ) throws(ResponseError) -> Handled {
    let id = try p.string("subscription")
    try checkIssued(id, p.method)
    let removed = self[keyPath: table][id].map { $0.session === session } ?? false
    if removed {
      self[keyPath: table][id] = nil
      session.subscriptions.remove(id)
    }
    return .read(.object(["removed": .bool(removed)]))
  }

  func subscribeActions(_ p: Params, _ session: Session) throws(ResponseError) -> Handled {
    let ids = try p.optionalStringArray("tipIds")
    let subscription = ActionSubscription(id: makeSubscriptionID(), session: session, tipIDs: ids.map(Set.init))
    actionSubscribers[subscription.id] = subscription
    session.subscriptions.insert(subscription.id)
    return .read(.object(["subscription": .string(subscription.id)]))
  }

  func unsubscribeActions(_ p: Params, _ session: Session) throws(ResponseError) -> Handled {
    try unsubscribe(p, session, from: \.actionSubscribers)
  }

  /// Records an action, invalidates the tip (unless `invalidate: false`) and tells every action subscriber.
  func performAction(_ p: Params) throws(ResponseError) -> Handled {
    let id = try p.string("id")
    let actionID = try p.string("actionId")
    let shouldInvalidate = try p.optionalBool("invalidate") ?? true
    guard let definition = engine.definition(of: id) else {
      throw ResponseError(EngineError.unknownTip(id), method: p.method)
    }
    guard let index = definition.actions.firstIndex(where: { $0.id == actionID }) else {
      let known = definition.actions.map { "\"\($0.id)\"" }.joined(separator: ", ")
      throw ResponseError(
        code: .unknownAction,
        message: "unknown action \"\(actionID)\" for tip \"\(id)\" (its actions: \(known.isEmpty ? "none" : known))",
        data: .object(["id": .string(id), "actionId": .string(actionID)]))
    }
    if shouldInvalidate {
      apply(try engineCall(p.method) { () throws(EngineError) in try engine.invalidate(id, reason: .actionPerformed) })
    }
    for subscriber in actionSubscribers.values where subscriber.tipIDs?.contains(id) ?? true {
      // The performed action, always as an array, titled in the subscriber's locale.
      let action = definition.localized(for: subscriber.session.locale).actions[index]
      let actions: JSONValue = .array([
        .object(["id": .string(action.id), "title": .string(action.title), "index": .int(Int64(index))])
      ])
      stage(
        .notification(OutgoingNotification(subscription: subscriber.id, kind: .actionPerformed(tipID: id, actions: actions))),
        on: subscriber.session)
    }
    return .wrote(try tipStateJSON(id))
  }

  // MARK: Testing and time

  func override(_ override: TestingOverride) -> Handled {
    apply(engine.setTestingOverride(override))
    return .read(.null)
  }

  func requireVirtualClock(_ method: String) throws(ResponseError) -> VirtualClock {
    guard let virtualClock else {
      throw ResponseError(
        code: .virtualClockDisabled,
        message: "\(method): the virtual clock is disabled; start the daemon with `tipsd serve --clock virtual`")
    }
    return virtualClock
  }

  func advanceClock(_ p: Params) throws(ResponseError) -> Handled {
    let clock = try requireVirtualClock(p.method)
    let seconds = try p.double("seconds")
    guard seconds >= 0, seconds.isFinite else { throw p.invalid("seconds", "must be a non-negative number") }
    clock.advance(by: seconds)
    apply(engine.advanceTime())
    return .wrote(.object(["now": .double(clock.now())]))
  }

  func setClock(_ p: Params) throws(ResponseError) -> Handled {
    let clock = try requireVirtualClock(p.method)
    let now = try p.double("now")
    guard now.isFinite else { throw p.invalid("now", "must be a finite number of seconds since the Unix epoch") }
    clock.set(now)
    apply(engine.advanceTime())
    return .wrote(.object(["now": .double(clock.now())]))
  }
}
