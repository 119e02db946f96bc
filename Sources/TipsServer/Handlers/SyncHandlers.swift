import TipsProtocol

extension Handlers {
  /// Sync across devices.
  static func registerSync(_ table: inout HandlerTable) {
    /// Hosted: the admin's only (PostgreSQL's host, database and role are the operator's business, not a user's).
    table.on(SyncStatusRequest.self) { _, context throws(ResponseError) in
      if let refusal = context.services.mode.operatorRefusal(context) { throw refusal }
      return context.services.mode.syncStatus()
    }

    /// Hosted: a device daemon's operations (`tipsd serve --sync wss://…`), into the session's own account (an
    /// admin names it), answered once committed.
    table.onAsync(SyncPushRequest.self) { request, context, reply in
      let hosted: HostedService
      do throws(ResponseError) { hosted = try Handlers.hosted(context) } catch { return reply(.failure(error)) }
      guard let tenant = context.tenant else {
        return reply(.failure(.invalidParams("\(SyncPushRequest.method): no account")))
      }
      hosted.push(request, to: tenant, from: context.session) { result in
        reply(result.map { SyncPushRequest.Response(cursor: $0) })
      }
    }

    /// Hosted: a device daemon's catch-up, from the session's own account (an admin names it).
    table.onAsync(SyncPullRequest.self) { request, context, reply in
      let hosted: HostedService
      do throws(ResponseError) { hosted = try Handlers.hosted(context) } catch { return reply(.failure(error)) }
      guard let account = context.tenant?.account else {
        return reply(.failure(.invalidParams("\(SyncPullRequest.method): no account")))
      }
      hosted.pull(request, of: account, session: context.session, reply: reply)
    }
  }
}
