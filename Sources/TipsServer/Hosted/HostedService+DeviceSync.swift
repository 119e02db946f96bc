import TipsEngine
import TipsHosted
import TipsJSON
import TipsProtocol
import TipsRecords
import TipsSync
import TipsSystem

/// Devices syncing through the node (`tipsd serve --sync wss://…`, #37): `sync/push` stores a device's checked
/// operations as its own in the group commit, `sync/pull` reads the account's operations (or its snapshot) by the
/// device's cursor, and every session that pulled hears `sync/changed` whenever the account's cursor moves.
extension HostedService {
  /// A session that pulled: told whenever its account's operations move.
  struct SyncWatcher {
    let id: String
    let account: String
    unowned let session: Session
  }

  /// Checks a device's operations and queues them for this turn's commit; `reply` gets the account's last cursor
  /// once PostgreSQL committed them (or the refusal). Nothing is queued when any operation is refused.
  func push(
    _ request: SyncPushRequest, to tenant: Tenant, from session: Session,
    reply: @escaping (Result<Int64, ResponseError>) -> Void
  ) {
    let method = SyncPushRequest.method
    guard let account = tenant.account, let model = tenant.model else {
      return reply(.failure(ResponseError(code: .internalError, message: "\(method): the account is not loaded")))
    }
    guard request.device != configuration.node else {
      return reply(.failure(.invalidParams("\(method): params.device is this node's own id")))
    }
    // First: every operation of a push costs the node its checks whether or not the push is then refused, so each
    // counts against the account's rate before any is checked (a flood of pushes refused for their contents is
    // held back by the rate like one of pushes stored).
    if let refusal = pushRate(account, operations: request.ops.count, session: session, method: method) {
      return reply(.failure(refusal))
    }
    let now = System.wallClockSeconds()
    var operations: [PendingOperation] = []
    var donations = false
    for (index, item) in request.ops.enumerated() {
      let path = "\(method): params.ops[\(index)].op"
      switch SyncOperation.untrusted(device: request.device, seq: item.seq, op: item.op, now: now) {
      case .failure(let error):
        return reply(.failure(.invalidParams("\(path): \(error.problem)")))
      case .success(let operation):
        switch operation.body {
        case .display(let key, _, _, _, _, _), .invalidate(let key, _, _), .resetEligibility(let key):
          guard tenant.engine.definition(of: Engine.tipID(ofRecordKey: key)) != nil else {
            return reply(.failure(.invalidParams("\(path): key \"\(key)\" names no tip of the node's catalog")))
          }
        case .donation(_, _, let info, _):
          donations = true
          if let refusal = infoBudget(info, method: method) { return reply(.failure(refusal)) }
        case .parameter(let id, _):
          if let refusal = parameterBudget(id, tenant: tenant, method: method) { return reply(.failure(refusal)) }
        default:
          break
        }
        operations.append(PendingOperation(seq: operation.seq, payload: operation.payload))
      }
    }
    if donations, let refusal = donationQuota(tenant, method: method) { return reply(.failure(refusal)) }
    guard !operations.isEmpty else { return reply(.success(model.cursor)) }
    let bytes = operations.reduce(0) { $0 + $1.payload.utf8.count }
    if let refusal = stateBudget(tenant, adding: bytes, method: method) { return reply(.failure(refusal)) }
    if let refusal = deviceBinding(request.device, tenant: tenant, session: session, method: method) {
      return reply(.failure(refusal))
    }
    tenant.devicePushes.append(DevicePush(device: request.device, operations: operations, reply: reply))
    touched(tenant)
    services.requestEndOfTurn()
  }

  /// A device's pull: the operations after `after` or the snapshot; the session is subscribed to `sync/changed`.
  func pull(
    _ request: SyncPullRequest, of account: String, session: Session,
    reply: @escaping (Result<SyncPullRequest.Response, ResponseError>) -> Void
  ) {
    let method = SyncPullRequest.method
    store.pullAsDevice(
      account, device: request.device, after: request.after, limit: request.limit,
      maxDevices: configuration.accountMaxDevices, deviceDays: configuration.opsDeviceDays
    ) { [weak self] result in
      guard let self else { return }
      switch result {
      case .failure(let error) where error == .deviceLimit:
        reply(.failure(self.deviceLimitRefusal(method: method)))
      case .failure(let error):
        reply(.failure(.unavailable(method: method, retryAfter: 1, error.message)))
      case .success(let pulled):
        let subscription = self.watchSync(account, session: session)
        switch pulled {
        case .snapshot(let state, let cursor):
          guard let snapshot = try? JSONParser.parse(state) else {
            return reply(
              .failure(ResponseError(code: .internalError, message: "\(method): the account's snapshot is unreadable")))
          }
          reply(
            .success(
              SyncPullRequest.Response(
                operations: [], snapshot: snapshot, cursor: cursor, more: true, subscription: subscription)))
        case .rows(let rows):
          var operations: [SyncPullRequest.Operation] = []
          for row in rows {
            // Every stored payload is tipsd's own JSON; one that is not an object is skipped as a device skips it.
            guard case .object(let op)? = try? JSONParser.parse(row.payload) else { continue }
            operations.append(SyncPullRequest.Operation(cursor: row.cursor, device: row.device, seq: row.seq, op: op))
          }
          reply(
            .success(
              SyncPullRequest.Response(
                operations: operations, snapshot: nil, cursor: rows.last?.cursor ?? request.after,
                more: rows.count >= request.limit, subscription: subscription)))
        }
      }
    }
  }

  /// The session's `sync/changed` subscription (made by its first pull; a session follows one account).
  private func watchSync(_ account: String, session: Session) -> String {
    if let watcher = syncWatchers[session.id] {
      if watcher.account == account { return watcher.id }
      // An admin's session pulling another account: it follows that one now.
      syncWatchersByAccount[watcher.account]?.remove(session.id)
      if syncWatchersByAccount[watcher.account]?.isEmpty == true { syncWatchersByAccount[watcher.account] = nil }
    }
    guard !session.isGone else { return "" }
    let id = services.subscriptionIDs.next()
    syncWatchers[session.id] = SyncWatcher(id: id, account: account, session: session)
    syncWatchersByAccount[account, default: []].insert(session.id)
    return id
  }

  /// The account's operations moved (any node's commit, a device's push through any node): its pulling sessions
  /// are told.
  func syncChanged(_ account: String, cursor: Int64) {
    // Most nodes have no watcher at all: no hash of the account for every fleet notice then.
    guard !syncWatchersByAccount.isEmpty, let ids = syncWatchersByAccount[account] else { return }
    for id in ids {
      guard let watcher = syncWatchers[id], watcher.account == account, !watcher.session.isGone else { continue }
      let note = SyncChangedNotification(subscription: watcher.id, cursor: cursor)
      services.stage(.notification(StagedNotification(notification: note, shouldDisplay: nil)), on: watcher.session)
    }
    services.requestEndOfTurn()
  }

  /// The session is gone: it follows no account any more.
  func unwatchSync(_ session: Session) {
    guard let watcher = syncWatchers.removeValue(forKey: session.id) else { return }
    syncWatchersByAccount[watcher.account]?.remove(session.id)
    if syncWatchersByAccount[watcher.account]?.isEmpty == true { syncWatchersByAccount[watcher.account] = nil }
  }
}
