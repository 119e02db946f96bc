public import TipsJSON

// The engine's parameters (TipKit's `@Parameter`) and the global display frequency.

extension Engine {
  // MARK: - Parameters

  /// Declares parameters (Bool, Int, Double or String defaults). A transient parameter goes back to its default
  /// (and its stored value is deleted); a stored value of another type than the new default's is dropped.
  public func defineParameters(_ definitions: [ParameterDefinition]) throws(EngineError) -> Mutation {
    for (index, definition) in definitions.enumerated() {
      guard !definition.id.isEmpty else {
        throw .invalidArgument(argument: "parameters[\(index)].id", problem: "must not be empty")
      }
      guard JSONDecoding.isScalar(definition.defaultValue) else {
        throw .invalidArgument(
          argument: "parameters[\(index)].default",
          problem: "must be a boolean, number or string (got \(parameterTypeName(definition.defaultValue)))")
      }
    }
    let now = tick()
    var writes: [StateWrite] = []
    var dirty: [Int] = []
    for definition in definitions {
      let parameter = parameterSlot(definition.id)
      let old = parameter.value
      parameter.definition = definition
      if definition.transient {
        parameter.stored = nil
        writes.append(.deleteParameter(id: definition.id))
      } else if let stored = parameter.stored {
        if let converted = Self.coerce(stored, to: definition.defaultValue) {
          parameter.stored = converted
        } else {
          parameter.stored = nil
          writes.append(.deleteParameter(id: definition.id))
        }
      }
      if parameter.value != old { dirty += parameter.dependents }
    }
    return finish(settle(rules: dirty, now: now), writes: writes)
  }

  /// Sets a defined parameter. The value's type must be the default's (an Int is accepted, as a Double, where a
  /// Double is declared). Transient parameters are not persisted.
  public func setParameter(_ id: String, _ value: JSONValue) throws(EngineError) -> Mutation {
    guard let parameter = parameters[id], let definition = parameter.definition else { throw .unknownParameter(id) }
    guard let converted = Self.coerce(value, to: definition.defaultValue) else {
      throw .parameterTypeMismatch(
        id: id, expected: parameterTypeName(definition.defaultValue), got: parameterTypeName(value))
    }
    let now = tick()
    let old = parameter.value
    if parameter.stored == converted { return finish([]) }
    parameter.stored = converted
    let writes: [StateWrite] = parameter.isPersisted ? [.parameter(id: id, value: converted)] : []
    let dirty = parameter.value != old ? parameter.dependents : []
    return finish(settle(rules: dirty, now: now), writes: writes)
  }

  /// Whether `id` is a defined parameter (the catalog's, in hosted mode).
  public func isDefinedParameter(_ id: String) -> Bool { parameters[id]?.definition != nil }

  /// A parameter's current value; `.null` when it is not defined.
  public func parameterValue(_ id: String) -> JSONValue { parameters[id]?.value ?? .null }

  /// The value converted to the type of `model` (Int → Double allowed), or nil when the types differ.
  static func coerce(_ value: JSONValue, to model: JSONValue) -> JSONValue? {
    switch (value, model) {
    case (.bool, .bool), (.int, .int), (.double, .double), (.string, .string): value
    case (.int(let i), .double): .double(Double(i))
    default: nil
    }
  }

  // MARK: - Display frequency

  /// Sets the global display frequency (a cooldown after any display, gating tips never displayed).
  public func configure(displayFrequency: DisplayFrequency) -> Mutation {
    let now = tick()
    guard displayFrequency != frequency else { return finish([]) }
    let before = cooldownActive(now)
    frequency = displayFrequency
    let state = cooldownGateChanged(before: before, now: now)
    return finish(settle(state: state, now: now), writes: [.displayFrequency(displayFrequency)])
  }

  /// The global display frequency.
  public var displayFrequency: DisplayFrequency { frequency }
}
