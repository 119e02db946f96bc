import TipsProtocol

/// Every request's handler, registered once. Each handler receives its typed request and a ``RequestContext`` and
/// returns its typed response; whether the request was durable (its reply must wait for the commit) is derived from
/// whether it staged writes, not declared.
enum Handlers {
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
    registerCatalogs(&table)
    for type in Messages.requests {
      precondition(table[type.method] != nil, "no handler for \(type.method)")
    }
    return table
  }()
}
