import TipsProtocol

extension Handlers {
  @Sendable static func notHosted(_ method: String) -> ResponseError {
    .forbidden(method: method, "this daemon serves one user's state; accounts exist in hosted mode (tipsd serve --hosted)")
  }

  /// Hosted mode's methods: signing in again, and the admin's account methods. A daemon serving one user's state
  /// (not `--hosted`) has no accounts.
  static func registerHosted(_ table: inout HandlerTable) {
    table.on(AuthRefreshRequest.self) { _, _ throws(ResponseError) in throw notHosted(AuthRefreshRequest.method) }
    table.on(AccountsListRequest.self) { _, _ throws(ResponseError) in throw notHosted(AccountsListRequest.method) }
    table.on(AccountsExportRequest.self) { _, _ throws(ResponseError) in throw notHosted(AccountsExportRequest.method) }
    table.on(AccountsImportRequest.self) { _, _ throws(ResponseError) in throw notHosted(AccountsImportRequest.method) }
    table.on(AccountsDeleteRequest.self) { _, _ throws(ResponseError) in throw notHosted(AccountsDeleteRequest.method) }
  }
}
