/// What the server needs to know about a method before it runs it, declared on the request type (issue #44) rather
/// than kept in name lists beside the dispatcher: whether it changes an account, takes an idempotency key, syncs,
/// which accounts it acts on, and where a hosted node serves it.
public struct MethodTraits: Sendable, Equatable {
  /// Which accounts a method acts on.
  public enum Scope: Sendable, Equatable {
    /// The session's account (an admin names one with `account`).
    case account
    /// No account: signing in, the admin's account methods, the catalog, notifications.
    case accountFree
    /// An account, or — an admin naming none — every account (the fleet's analytics stream and metrics).
    case fleetWide
  }

  /// Whether a hosted node serves the method.
  public enum Hosted: Sendable, Equatable {
    case served
    /// A definition method: one catalog defines tips, groups, parameters and events for every account (-32014).
    case definitionsFromCatalog
    /// About one device's screen, never stored centrally (-32014).
    case deviceOnly
    /// Only with `--allow-testing` (-32011): a user picking their own A/B variant.
    case testingOnly
  }

  /// Changes an account's state: a hosted node refuses it at once (-32016) while PostgreSQL cannot commit.
  public var isChange = false
  /// Takes an optional `idempotencyKey` (issue #34): a repeat of a key on the same account changes nothing and gets
  /// the first reply.
  public var isIdempotent = false
  /// Its changes sync, so it is refused (-32012) while the sync outbox is full.
  public var syncs = false
  public var scope = Scope.account
  public var hosted = Hosted.served

  public init(
    isChange: Bool = false, isIdempotent: Bool = false, syncs: Bool = false, scope: Scope = .account,
    hosted: Hosted = .served
  ) {
    self.isChange = isChange
    self.isIdempotent = isIdempotent
    self.syncs = syncs
    self.scope = scope
    self.hosted = hosted
  }

  /// A change to one account that takes an idempotency key and syncs (`events/donate`, `tips/invalidate` …).
  public static let syncedChange = MethodTraits(isChange: true, isIdempotent: true, syncs: true)
  /// An admin's method on accounts named in its params, not the session's.
  public static let accountFree = MethodTraits(scope: .accountFree)
  /// A definition method, which a hosted node refuses.
  public static let definition = MethodTraits(hosted: .definitionsFromCatalog)
}

extension Messages {
  /// Every method's traits, requests and client notifications, by method name.
  public static let traitsByMethod: [String: MethodTraits] = {
    var traits: [String: MethodTraits] = [:]
    for type in requests { traits[type.method] = type.traits }
    for type in clientNotifications { traits[type.method] = .accountFree }
    return traits
  }()

  /// The traits of `method`; an unknown method's are the defaults (it is refused before they matter).
  public static func traits(of method: String) -> MethodTraits { traitsByMethod[method] ?? MethodTraits() }
}
