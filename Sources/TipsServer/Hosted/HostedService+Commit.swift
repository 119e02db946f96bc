import TipsAuth
import TipsCatalog
import TipsEngine
import TipsHosted
import TipsJSON
import TipsLogging
import TipsMetrics
import TipsProtocol
import TipsStore
import TipsSync
import TipsSystem
import TipsTransport

// Hosted mode's group commit: every touched account's operations, history and idempotent replies in one
// transaction at the end of a loop turn; replies released when PostgreSQL answers. One account's part that
// PostgreSQL refuses (a key another node committed first, a failing statement) is that account's loss alone (#42).

extension HostedService: TurnCommitter {
  // MARK: - The turn committer

  /// A hosted account's writes are its operations (made by ``Services/record(_:in:history:)``): PostgreSQL, not the
  /// datastore, stores them; the request is durable all the same. Its history entries get PostgreSQL's cursors at the
  /// commit, which feeds the analytics stream then.
  func stage(_ mutation: Mutation, leading: [HistoryEvent], in tenant: Tenant) {
    let turn = services.turn
    if !mutation.writes.isEmpty {
      turn.noteStaged(mutation.writes.count)
      touched(tenant)
    }
    if !mutation.changes.isEmpty && !tenant.changed {
      tenant.changed = true
      turn.changedTenants.append(tenant)
    }
    let engine = tenant.engine
    if tenant.history.enabled,
      let streamed = tenant.history.record(
        mutation, leading: leading, now: { engine.clock.now() }, into: tenant, counters: services.counters),
      !streamed.isEmpty
    {
      streamAfterCommit(streamed, of: tenant)
    }
    if !tenant.pendingHistory.isEmpty { touched(tenant) }
  }

  func stagedOperations(of tenant: Tenant) { touched(tenant) }

  func stagedReply(in tenant: Tenant) {
    services.turn.noteStaged()
    touched(tenant)
  }

  /// Inspectors of the accounts whose tips changed are told, then every touched account's changes go to PostgreSQL
  /// in one transaction; the output of the sessions it concerns waits for it (``committed`` releases it).
  func commitTurn() -> (committed: Bool, dirty: [Session], held: Set<ObjectIdentifier>) {
    let turn = services.turn
    if turn.changed {
      turn.changed = false
      let changed = turn.changedTenants
      turn.changedTenants.removeAll(keepingCapacity: true)
      for tenant in changed where tenant.changed {
        tenant.changed = false
        for (session, note) in tenant.subscriptions.inspectNotifications() {
          services.stage(.notification(note), on: session)
        }
      }
    }
    let dirty = turn.takeDirty()
    return (true, dirty, commitTurn(dirty: dirty))
  }

  func afterTurn(committed: Bool, stopping: Bool) {
    if !stopping { afterTurn() }
  }
}

extension HostedService {
  // MARK: - Committing

  /// The account has changes or history entries for this turn's commit.
  func touched(_ tenant: Tenant) {
    guard !tenant.touched else { return }
    tenant.touched = true
    touchedThisTurn.append(tenant)
    // Not evicted before this turn's commit (an admin's request, or a session that closed after sending it, leaves
    // the account without sessions): evicted, its next read could race the commit and miss it.
    if let account = tenant.account { node.changed(account) }
  }

  /// History entries the analytics stream carries once this turn's commit gives them their cursors.
  func streamAfterCommit(_ entries: [HistoryEvent], of tenant: Tenant) {
    guard let account = tenant.account else { return }
    streamedThisTurn[account, default: []] += entries
  }

  /// The end of a loop turn: every touched account's changes go to PostgreSQL in one transaction. Returns the
  /// sessions whose output must wait for it (the caller hands the others' over now).
  func commitTurn(dirty: [Session]) -> Set<ObjectIdentifier> {
    let touched = touchedThisTurn
    touchedThisTurn.removeAll(keepingCapacity: true)
    var changes: [HostedStore.AccountChanges] = []
    var batch = Batch()
    for tenant in touched {
      tenant.touched = false
      guard let account = tenant.account, let model = tenant.model else {
        // Never answered otherwise: a device's push waits for its reply.
        for push in tenant.devicePushes {
          push.reply(.failure(.unavailable(method: SyncPushRequest.method, retryAfter: 1, "the account is not loaded")))
        }
        tenant.devicePushes.removeAll()
        continue
      }
      // Being read from PostgreSQL (a failed commit's reload): what this turn queued for it — a pull's merge that
      // reached a budget — is rebuilt by the reload, and a commit now would make the account busy under the load,
      // whose completion would then be ignored (its requests waited for good). No request ran on it: they wait; a
      // device's push is answered -32016 and sent again.
      if let phase = node.phase(of: account), phase == .loading || phase == .reloading || phase == .orphaned {
        for push in tenant.devicePushes {
          push.reply(
            .failure(.unavailable(method: SyncPushRequest.method, retryAfter: 1, "the account is being read again")))
        }
        tenant.devicePushes.removeAll()
        continue
      }
      if !tenant.variantsStored {
        tenant.variantsStored = true
        _ = model.storeUnrecordedVariants(wallNow: System.wallClockSeconds())
      }
      var operations = model.outboxBatch(.max)
      if !tenant.seqsInFlight.isEmpty { operations.removeAll { tenant.seqsInFlight.contains($0.seq) } }
      let chunks = tenant.pendingHistory.encodedChunks.map {
        HostedStore.HistoryChunk(count: $0.count, firstAt: $0.oldestAt, lastAt: $0.newestAt, bytes: $0.bytes)
      }
      tenant.pendingHistory.removeAll()
      let keyed = tenant.idempotency.stagedRequests
      let replies = tenant.idempotency.takeStaged()
      let pushes = tenant.devicePushes
      tenant.devicePushes.removeAll()
      guard !operations.isEmpty || !chunks.isEmpty || !replies.isEmpty || !pushes.isEmpty else { continue }
      changes.append(
        HostedStore.AccountChanges(
          account: account, operations: operations, history: chunks, replies: replies,
          devices: pushes.map { HostedStore.DeviceOperations(device: $0.device, operations: $0.operations) }))
      charge(
        tenant,
        operationBytes: operations.reduce(0) { $0 + $1.payload.utf8.count }
          + pushes.reduce(0) { total, push in push.operations.reduce(total) { $0 + $1.payload.utf8.count } },
        historyRows: chunks.count)
      let seqs = operations.map(\.seq)
      batch.members.append(
        Batch.Member(
          account: account, pushed: seqs, historyCount: chunks.reduce(0) { $0 + $1.count },
          streamed: streamedThisTurn.isEmpty ? nil : streamedThisTurn.removeValue(forKey: account),
          deviceReplies: pushes.map(\.reply), devices: pushes.map(\.device), keyed: keyed))
      tenant.seqsInFlight.formUnion(seqs)
      node.committing(account)
    }
    streamedThisTurn.removeAll()
    for tenant in touched { if let account = tenant.account { perform(node.turnEnded(account)) } }
    var held: Set<ObjectIdentifier> = []
    for session in dirty where session.commitHold == .held {
      session.commitHold = .none
      guard !changes.isEmpty else { continue }
      held.insert(ObjectIdentifier(session))
      batch.sessions.append(session)
    }
    guard !changes.isEmpty else { return held }
    nextBatch += 1
    let id = nextBatch
    for session in batch.sessions { session.commitHold = .awaiting(id) }
    batches[id] = batch
    store.commit(changes) { [weak self] result in self?.committed(id, result) }
    return held
  }

  func committed(_ id: UInt64, _ result: Result<[String: HostedStore.Committed], HostedError>) {
    guard let batch = batches.removeValue(forKey: id) else { return }
    var success = true
    /// Accounts erased meanwhile: PostgreSQL stored nothing of this commit for them.
    var erasedNow: [Batch.Member] = []
    /// Accounts whose part alone PostgreSQL refused (#42): the others were stored.
    var refused: Set<String> = []
    var firstReplies: FirstReplies = [:]
    switch result {
    case .success(let answers):
      for member in batch.members {
        let account = member.account
        // Looked up once: no member's tenant changes while the batch is answered (busy accounts are not evicted).
        let tenant = tenants[account]
        if !member.pushed.isEmpty { tenant?.seqsInFlight.subtract(member.pushed) }
        let answer = answers[account]
        if answer?.erased == true {
          erasedNow.append(member)
          continue
        }
        if let answer, let reason = answer.refused {
          refused.insert(account)
          refusedAlone(member, reason: reason, answer: answer, into: &firstReplies)
          continue
        }
        guard let tenant, let model = tenant.model else {
          perform(node.committed(account, success: false))
          continue
        }
        _ = model.pushed(member.pushed)
        if let last = answer?.lastCursor, !model.advanceCursorAfterPush(pushed: member.pushed.count, lastCursor: last) {
          _ = node.othersWrote(account)
        }
        // Devices' operations (`sync/push`) come after the node's own: merged by the pull that reads them, the way
        // another node's are (their cursors are PostgreSQL's), then their pushes are answered.
        // A push with another operation stored under one of its seqs (#42) was not stored: refused, never dropped.
        if let last = answer?.devicesLastCursor, last > model.cursor { _ = node.othersWrote(account) }
        for (index, reply) in member.deviceReplies.enumerated() {
          if let seq = answer?.deviceClashes[index] {
            reply(.failure(deviceClash(index < member.devices.count ? member.devices[index] : "", seq: seq)))
          } else if let last = answer?.devicesLastCursor {
            reply(.success(max(last, answer?.lastCursor ?? 0)))
          }
        }
        if let last = [answer?.lastCursor, answer?.devicesLastCursor].compactMap({ $0 }).max() {
          node.grew(
            account, last: last, snapshotCursor: tenant.snapshotCursor,
            threshold: Int64(configuration.compactionThreshold))
        }
        if let first = answer?.historyFirst.first, member.historyCount > 0 {
          let count = member.historyCount
          let provisionalLast = tenant.history.lastCursor
          let provisionalFirst = provisionalLast - Int64(count) + 1
          tenant.history.committed(lastCursor: first + Int64(count) - 1)
          if let streamed = member.streamed, tenant.subscriptions.hasAnalyticsSubscribers {
            let moved = streamed.map { entry -> HistoryEvent in
              var entry = entry
              entry.cursor = first + (entry.cursor - provisionalFirst)
              return entry
            }
            for (session, note) in tenant.subscriptions.analyticsNotifications(for: moved[...]) {
              services.stage(.notification(note), on: session)
            }
          }
        }
        tenant.committedHistory = tenant.history.state
        perform(node.committed(account, success: true))
      }
    case .failure(let error):
      success = false
      for member in batch.members where !member.pushed.isEmpty {
        tenants[member.account]?.seqsInFlight.subtract(member.pushed)
      }
      logger.warning(
        "hosted: commit failed; the accounts are read again",
        [("accounts", String(batch.members.count)), ("error", error.message)])
      for member in batch.members { perform(node.committed(member.account, success: false)) }
      for member in batch.members {
        for reply in member.deviceReplies {
          reply(
            .failure(.unavailable(method: SyncPushRequest.method, retryAfter: 1, "the commit failed: \(error.message)"))
          )
        }
      }
    }
    for member in erasedNow {
      for reply in member.deviceReplies { reply(.failure(.unauthorized(reason: "deleted", "the account was deleted"))) }
    }
    for session in batch.sessions where session.commitHold == .awaiting(id) { session.commitHold = .none }
    if erasedNow.isEmpty && refused.isEmpty {
      release(batch.sessions, success, [:])
    } else {
      // Their sessions' changes were not stored: not acknowledged (the erased accounts' sessions are being closed).
      // An admin's session may have changed any account of the batch: it is not acknowledged either.
      let lostAccounts = refused.union(erasedNow.map(\.account))
      let lost = batch.sessions.filter { session in
        session.principal?.account.map(lostAccounts.contains) ?? (session.principal?.isAdmin == true)
      }
      let lostIDs = Set(lost.map(ObjectIdentifier.init))
      release(batch.sessions.filter { !lostIDs.contains(ObjectIdentifier($0)) }, success, [:])
      release(lost, false, firstReplies)
      for member in erasedNow { _ = dropDeleted(member.account) }
    }
    for session in batch.sessions { services.resumeInput(session) }
    services.requestEndOfTurn()
  }

  /// -32014 for a `sync/push` whose device already stored another operation under `seq` (on any node, at any time):
  /// a device id is one device's own, and a second pusher is refused rather than answered for nothing stored.
  private func deviceClash(_ device: String, seq: Int64) -> ResponseError {
    .forbidden(
      method: SyncPushRequest.method,
      "device \"\(device)\" already stored another operation as seq \(seq); a device id is one device's own "
        + "(nothing of this push was stored; a retry of the same operations succeeds)")
  }

  /// PostgreSQL stored nothing of this account's part of the commit and the rest of it (#42): its engine, which
  /// holds the part, is read again; its requests are answered -32016, except those whose idempotency key another
  /// node committed first, which get that first reply (a repeat of a key changes nothing and gets the first reply).
  private func refusedAlone(
    _ member: Batch.Member, reason: String, answer: HostedStore.Committed, into firstReplies: inout FirstReplies
  ) {
    logger.info(
      "hosted: an account's part of the commit was not stored; it is read again",
      [
        ("account", member.account), ("reason", reason),
      ])
    for request in member.keyed {
      guard let result = answer.firstReplies[request.key] else { continue }
      firstReplies[request.session, default: []].append((request.id, result))
    }
    perform(node.committed(member.account, success: false))
    for reply in member.deviceReplies {
      reply(.failure(.unavailable(method: SyncPushRequest.method, retryAfter: 1, "the commit failed: \(reason)")))
    }
  }

}
