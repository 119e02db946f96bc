import TipsProtocol

extension Handlers {
  /// Sync across devices.
  static func registerSync(_ table: inout HandlerTable) {
    table.on(SyncStatusRequest.self) { _, context throws(ResponseError) in
      if let hosted = context.services.hosted { return hosted.syncStatus() }
      return context.services.local?.sync?.status() ?? .disabled
    }
  }
}
