import TipsProtocol

extension Handlers {
  /// Sync across devices.
  static func registerSync(_ table: inout HandlerTable) {
    /// Hosted: the admin's only (PostgreSQL's host, database and role are the operator's business, not a user's).
    table.on(SyncStatusRequest.self) { _, context throws(ResponseError) in
      if context.services.hosted != nil { return try admin(context).syncStatus() }
      return context.services.local?.sync?.status() ?? .disabled
    }
  }
}
