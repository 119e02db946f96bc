/// Everything the engine refuses, with a message a client can show as is.
public enum EngineError: Error, Sendable, Equatable, CustomStringConvertible {
  /// No tip with this id is registered.
  case unknownTip(String)
  /// No group with this id is registered.
  case unknownGroup(String)
  /// No parameter with this id is defined.
  case unknownParameter(String)
  /// A parameter was set to a value of another type than its default's.
  case parameterTypeMismatch(id: String, expected: String, got: String)
  /// A definition (tip, rule, parameter, group) is malformed; `path` names the offending JSON location.
  case invalidDefinition(path: String, message: String)
  /// An argument is out of range (a negative duration, a donation limit below 1, an empty event id, …): `argument`
  /// names it as the protocol does (`duration`, `info.region`, `parameters[1].default`), `problem` says what is wrong
  /// (`must be a non-negative number of seconds`).
  case invalidArgument(argument: String, problem: String)

  public var description: String {
    switch self {
    case .unknownTip(let id): "unknown tip \"\(id)\""
    case .unknownGroup(let id): "unknown group \"\(id)\""
    case .unknownParameter(let id): "unknown parameter \"\(id)\""
    case .parameterTypeMismatch(let id, let expected, let got):
      "parameter \"\(id)\" is declared \(expected), got \(got)"
    case .invalidDefinition(let path, let message): "\(path): \(message)"
    case .invalidArgument(let argument, let problem): "\(argument) \(problem)"
    }
  }
}

/// Engine-wide settings that are not durable state.
public struct EngineConfiguration: Sendable {
  /// How many donations of an event are kept (newest first) when no per-event limit is set. TipKit keeps 1000.
  public var defaultDonationLimit: Int
  /// How donations made at the same instant are ordered (which of them a bounded history drops first): in the order
  /// they arrived (false, the default), or by their associated values (``Donation/precedes(_:_:canonical:)``), the
  /// same order on every device whatever order they arrived in — what sync across devices needs.
  public var canonicalDonationOrder: Bool
  /// With sync (or in hosted mode) the account: a tip whose variants include a holdout is assigned from a hash of it
  /// instead of the install id, so every device of the account is held out, or none (a holdout measures installs,
  /// and with sync an install is the account). nil: the install id, like every other variant.
  public var holdoutAccount: String?
  /// A donation re-evaluates only the tips it can still change (see `Engine+Saturation`): true, the default. False
  /// re-evaluates every tip that reads the event, as the engine did before; the differential tests compare the two.
  public var skipsSaturatedTips: Bool
  /// Where engines that register the same definitions (a hosted node's accounts, all from one catalog) keep one copy
  /// of each; nil: every engine keeps its own.
  public var definitionShelf: DefinitionShelf?

  public init(
    defaultDonationLimit: Int = 1000, canonicalDonationOrder: Bool = false, holdoutAccount: String? = nil,
    skipsSaturatedTips: Bool = true, definitionShelf: DefinitionShelf? = nil
  ) {
    self.defaultDonationLimit = max(1, defaultDonationLimit)
    self.canonicalDonationOrder = canonicalDonationOrder
    self.holdoutAccount = holdoutAccount
    self.skipsSaturatedTips = skipsSaturatedTips
    self.definitionShelf = definitionShelf
  }
}
