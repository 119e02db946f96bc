import TipsProtocol

extension Handlers {
  /// The catalog file the daemon serves.
  static func registerCatalog(_ table: inout HandlerTable) {
    table.on(CatalogReloadRequest.self) { _, context throws(ResponseError) in
      guard let reload = context.services.reloadCatalog else {
        throw .invalidParams("catalog/reload: this daemon serves no catalog (start it with --catalog FILE)")
      }
      return reload("catalog/reload")
    }
  }
}
