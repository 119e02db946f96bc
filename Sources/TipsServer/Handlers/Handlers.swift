import TipsProtocol

/// Every request's handler, registered once. Each handler receives its typed request and a ``RequestContext`` and
/// returns its typed response; whether the request was durable (its reply must wait for the commit) is derived from
/// whether it staged writes, not declared.
enum Handlers {
  /// Methods that change an account's state: in hosted mode refused at once (-32016) while PostgreSQL cannot commit.
  static let hostedChanges: Set<String> = [
    DonateRequest.method, DisplayedRequest.method, InvalidateRequest.method, PerformActionRequest.method,
    ResetEligibilityRequest.method, SetParameterRequest.method, SetVariantRequest.method, ResetDatastoreRequest.method,
    AccountsImportRequest.method, AccountsDeleteRequest.method, SyncPushRequest.method,
  ]

  /// Definition methods, refused in hosted mode (-32014): there one catalog defines tips, groups, parameters and
  /// events for every account.
  static let hostedForbidden: Set<String> = [
    RegisterTipsRequest.method, UnregisterTipsRequest.method, RegisterGroupRequest.method,
    UnregisterGroupRequest.method, DefineParametersRequest.method, ConfigureRequest.method,
    ConfigureEventRequest.method, InstantiateRequest.method,
  ]

  /// Methods about one device's screen, which a hosted node (serving every device of an account, keeping only what
  /// PostgreSQL stores) refuses with -32014: a suppression is the device's own and is never stored centrally.
  static let hostedDeviceOnly: Set<String> = [SuppressRequest.method, ResumeRequest.method]
  /// Methods that only testing may call in hosted mode (refused -32011 unless the node runs with --allow-testing),
  /// beyond the testing-only ones refused in every mode: a user picking their own A/B variant.
  static let hostedTesting: Set<String> = [SetVariantRequest.method]

  /// Methods that change state and take an optional `idempotencyKey` (issue #34): a repeat of a key on the same
  /// account within `--idempotency-hours` changes nothing and gets the first reply.
  static let idempotent: Set<String> = [
    DonateRequest.method, DisplayedRequest.method, InvalidateRequest.method, PerformActionRequest.method,
    ResetEligibilityRequest.method, SetParameterRequest.method, SetVariantRequest.method, ResetDatastoreRequest.method,
  ]

  static let table: HandlerTable = {
    var table = HandlerTable()
    registerLifecycle(&table)
    registerDefinitions(&table)
    registerEvents(&table)
    registerStatus(&table)
    registerSubscriptions(&table)
    registerSync(&table)
    registerTesting(&table)
    registerCatalog(&table)
    registerMeasuring(&table)
    registerHosted(&table)
    for type in Messages.requests {
      precondition(table[type.method] != nil, "no handler for \(type.method)")
    }
    table.acceptIdempotencyKeys(idempotent)
    return table
  }()
}
