import TipsProtocol

extension Handlers {
  /// The catalog file the daemon serves.
  static func registerCatalog(_ table: inout HandlerTable) {
    /// Hosted: the admin's only — a reload re-reads the file (a staged catalog too), re-diffs every resident account
    /// and tells the fleet, and its diagnostics name files on the node.
    table.on(CatalogReloadRequest.self) { _, context throws(ResponseError) in
      if let refusal = context.services.mode.operatorRefusal(context) { throw refusal }
      guard let reload = context.services.reloadCatalog else {
        throw .invalidParams("catalog/reload: this daemon serves no catalog (start it with --catalog FILE)")
      }
      return reload("catalog/reload")
    }
  }
}
