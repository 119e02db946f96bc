import TipsHosted
import TipsProtocol

extension Handlers {
  @Sendable static func notHosted(_ method: String) -> ResponseError {
    .forbidden(
      method: method, "this daemon serves one user's state; accounts exist in hosted mode (tipsd serve --hosted)")
  }

  /// The hosted service, for a method only a hosted daemon answers.
  static func hosted(_ context: RequestContext) throws(ResponseError) -> HostedService {
    guard let hosted = context.services.hosted else { throw notHosted(context.method) }
    return hosted
  }

  /// The hosted service, for an admin-only method.
  static func admin(_ context: RequestContext) throws(ResponseError) -> HostedService {
    let hosted = try hosted(context)
    guard context.session.principal?.isAdmin == true else {
      throw .forbidden(method: context.method, "only the admin token may call it")
    }
    return hosted
  }

  /// Hosted mode's methods: signing in again, and the admin's account methods. A daemon serving one user's state
  /// (not `--hosted`) has no accounts.
  static func registerHosted(_ table: inout HandlerTable) {
    registerWebhooks(&table)
    /// The new token must name the same account; the session then ends at its expiry instead.
    table.on(AuthRefreshRequest.self) { request, context throws(ResponseError) in
      let hosted = try hosted(context)
      guard context.session.principal != nil else {
        throw .unauthorized(reason: "missing", "auth/refresh: the session is not signed in (use initialize's auth)")
      }
      let principal: Principal
      switch hosted.signInAttempt(request.token, on: context.session, refresh: true) {
      case .success(let verified): principal = verified
      case .failure(let error): throw error
      }
      // Another account's token is refused; the session keeps its token.
      if let refusal = hosted.signedIn(context.session, as: principal) { throw refusal }
      return hosted.signIn(of: principal)
    }

    table.onAsync(AccountsListRequest.self) { request, context, reply in
      let hosted: HostedService
      do throws(ResponseError) { hosted = try admin(context) } catch { return reply(.failure(error)) }
      hosted.store.listAccounts(after: request.after, limit: request.limit) { result in
        reply(
          result.map { rows in
            AccountsListRequest.Response(
              accounts: rows.map {
                .init(account: $0.account, operations: $0.cursor, resident: hosted.isResident($0.account))
              },
              next: rows.count == request.limit ? rows.last?.account : nil)
          }.mapError { .unavailable(method: AccountsListRequest.method, retryAfter: 1, $0.message) })
      }
    }

    table.onAsync(AccountsExportRequest.self) { request, context, reply in
      let hosted: HostedService
      do throws(ResponseError) { hosted = try admin(context) } catch { return reply(.failure(error)) }
      hosted.export(request.account) { result in
        if case .success = result {
          hosted.catalogs?.record(
            "account.export", app: AccountKey.app(of: request.account),
            detail: ["account": .string(AccountKey.subject(of: request.account))])
        }
        reply(result)
      }
    }

    table.onAsync(AccountsImportRequest.self) { request, context, reply in
      let hosted: HostedService
      do throws(ResponseError) { hosted = try admin(context) } catch { return reply(.failure(error)) }
      hosted.importAccount(request.account, from: request.export) { result in
        reply(result.map { AccountsImportRequest.Response(account: request.account, history: $0) })
      }
    }

    /// Erased from PostgreSQL in one transaction; every node (this one at once, the others when PostgreSQL notifies
    /// them) drops it from memory and closes its sessions.
    table.onAsync(AccountsDeleteRequest.self) { request, context, reply in
      let hosted: HostedService
      do throws(ResponseError) { hosted = try admin(context) } catch { return reply(.failure(error)) }
      hosted.deleteAccount(request.account) { result in
        switch result {
        case .success(let closed):
          reply(.success(AccountsDeleteRequest.Response(account: request.account, closedSessions: closed)))
        case .failure(let error):
          reply(.failure(.unavailable(method: AccountsDeleteRequest.method, retryAfter: 1, error.message)))
        }
      }
    }
  }
}
