import TipsProtocol

extension Handlers {
  /// Sync across devices.
  static func registerSync(_ table: inout HandlerTable) {
    table.on(SyncStatusRequest.self) { _, context throws(ResponseError) in
      context.tenant.sync?.status() ?? .disabled
    }
  }
}
