import TipsEngine
import TipsHosted
import TipsJSON
import TipsProtocol
import TipsSync
import TipsSystem
import TipsTransport

// Hosted mode's per-account budgets (#42: one account can never hurt another): what one account may cost a node and
// PostgreSQL — its state's bytes, a donation's info, parameters the catalog does not declare, devices, sessions on a
// node, history rows a day, operations a second — each checked before the change runs (a refused request changes
// nothing), refused with -32015 naming the quota, and counted (`tipsd_quota_refusals_total`).

extension HostedService {
  /// -32015 for `quota`, counted by quota for Prometheus.
  func quotaRefusal(
    method: String, quota: String, limit: Int, retryAfter: Double?, _ detail: String
  ) -> ResponseError {
    services.counters.quotaRefusals[quota, default: 0] += 1
    return .quotaExceeded(method: method, quota: quota, limit: limit, retryAfter: retryAfter, detail)
  }

  // MARK: - Changes

  /// A user's change to an account (its ``MethodTraits/isChange``): refused while the account's state is at
  /// `--account-max-state-bytes` or it added `--account-max-history-rows` history rows today on this node. The
  /// admin's changes (imports, erasure, repairs) are the operator's and pass.
  func changeBudget(_ tenant: Tenant, method: String, session: Session) -> ResponseError? {
    guard session.principal?.isAdmin != true, method != ResetDatastoreRequest.method else { return nil }
    if let refusal = stateBudget(tenant, adding: 0, method: method) { return refusal }
    let limit = appOverrides(of: tenant.account ?? "")?.accountMaxHistoryRows ?? configuration.accountMaxHistoryRows
    let now = System.wallClockSeconds()
    let day = Int((now / 86_400).rounded(.down))
    guard tenant.historyDay == day, tenant.historyRowsToday >= limit else { return nil }
    return quotaRefusal(
      method: method, quota: "historyRows", limit: limit, retryAfter: Double(day + 1) * 86_400 - now,
      "the account added \(tenant.historyRowsToday) lifecycle history rows today (UTC) on this node "
        + "(--account-max-history-rows \(limit))")
  }

  /// Whether the account's state may grow by about `adding` bytes: refused when its measured state plus `adding`
  /// passes `--account-max-state-bytes` (with nothing to add, when it is there already).
  func stateBudget(_ tenant: Tenant, adding: Int, method: String) -> ResponseError? {
    let limit = appOverrides(of: tenant.account ?? "")?.accountMaxStateBytes ?? configuration.accountMaxStateBytes
    func within() -> Bool { adding == 0 ? tenant.stateBytes < limit : tenant.stateBytes + adding <= limit }
    if within() { return nil }
    if tenant.stateBytesGrew {
      tenant.stateBytes = measureState(of: tenant)
      tenant.stateBytesGrew = false
      if within() { return nil }
    }
    return quotaRefusal(
      method: method, quota: "stateBytes", limit: limit, retryAfter: nil,
      "the account's state holds \(tenant.stateBytes) bytes"
        + (adding > 0 ? " and this change adds up to \(adding)" : "") + " (--account-max-state-bytes \(limit))")
  }

  /// The bytes of the account's merged state: its snapshot's JSON as this node would write it to `tipsd.snapshots`
  /// (the engine's rows and kept donations — what a node holds resident for it).
  func measureState(of tenant: Tenant) -> Int {
    guard let model = tenant.model else { return 0 }
    return AccountSnapshot(model: model).json.serialized().count
  }

  /// What a commit queued for the account: its operations' bytes (the state's growth until it is measured again) and
  /// its history rows (counted against today's budget).
  func charge(_ tenant: Tenant, operationBytes: Int, historyRows: Int) {
    if operationBytes > 0 {
      tenant.stateBytes += operationBytes
      tenant.stateBytesGrew = true
    }
    guard historyRows > 0 else { return }
    let day = Int((System.wallClockSeconds() / 86_400).rounded(.down))
    if tenant.historyDay != day {
      tenant.historyDay = day
      tenant.historyRowsToday = 0
    }
    tenant.historyRowsToday += historyRows
  }

  // MARK: - Donations and parameters

  /// A donation's `info`: at most `--max-info-bytes` of JSON.
  /// With `charging`, a user's session whose donation is refused: the oversized info costs its account one request
  /// of `--account-rate` per `--max-info-bytes` it carries, and the session's input is held while the account is in
  /// debt — reading and parsing it cost the node that much, refused or not.
  func infoBudget(_ info: JSONObject?, method: String, charging session: Session? = nil) -> ResponseError? {
    guard let info else { return nil }
    let limit = configuration.maxInfoBytes
    let bytes = JSONValue.object(info).serialized().count
    guard bytes > limit else { return nil }
    if let session, session.principal?.isAdmin != true, let account = session.principal?.account,
      let wait = limiter.take(account, now: clock.now(), cost: Double(bytes / max(limit, 1)))
    {
      holdInput(session, seconds: wait)
    }
    return quotaRefusal(
      method: method, quota: "infoBytes", limit: limit, retryAfter: nil,
      "a donation's info of \(bytes) bytes (--max-info-bytes \(limit))")
  }

  /// A parameter a device pushes must be one the catalog declares (an undeclared id would be kept for ever, each
  /// with its value).
  func parameterBudget(_ id: String, tenant: Tenant, method: String) -> ResponseError? {
    guard !tenant.engine.isDefinedParameter(id) else { return nil }
    return quotaRefusal(
      method: method, quota: "undeclaredParameters", limit: 0, retryAfter: nil,
      "parameter \"\(id)\" is not one the catalog declares (a hosted node keeps the catalog's parameters only)")
  }

  // MARK: - Operations, devices and sessions

  /// A push of `operations` operations counts each against `--account-rate` (the request itself took one).
  func pushRate(_ account: String, operations: Int, session: Session, method: String) -> ResponseError? {
    guard session.principal?.isAdmin != true, operations > 1 else { return nil }
    guard let wait = takeRate(account, cost: Double(operations - 1)) else { return nil }
    holdInput(session, seconds: wait)
    let rate = Int(rate(of: account))
    return quotaRefusal(
      method: method, quota: "rate", limit: rate, retryAfter: wait,
      "more than \(rate) operations a second for this account (--account-rate; each operation of a push counts)")
  }

  /// A device id belongs to the first session that pushed it through this node, while that session is open: another
  /// session's push of it (a stolen token writing as the user's phone) is refused, never answered and dropped.
  func deviceBinding(_ device: String, tenant: Tenant, session: Session, method: String) -> ResponseError? {
    if let holder = tenant.deviceSessions[device], holder != session.id, sessionsByID[holder] != nil {
      return .forbidden(
        method: method,
        "device \"\(device)\" is pushing through another session of this account; a device id is one device's own "
          + "(retry once that session closed)")
    }
    if tenant.deviceSessions[device] == nil, tenant.deviceSessions.count >= Self.deviceSessionsKept {
      tenant.deviceSessions = tenant.deviceSessions.filter { sessionsByID[$0.value] != nil }
    }
    tenant.deviceSessions[device] = session.id
    return nil
  }

  /// Device ids remembered per account before those of closed sessions are forgotten.
  static let deviceSessionsKept = 64

  /// A pull refused by the account's budget of devices (`--account-max-devices`).
  func deviceLimitRefusal(method: String) -> ResponseError {
    let limit = configuration.accountMaxDevices
    let days = Int(configuration.opsDeviceDays)
    return quotaRefusal(
      method: method, quota: "devices", limit: limit, retryAfter: nil,
      "the account syncs \(limit) devices, none silent for --ops-device-days (\(days)) to be replaced "
        + "(--account-max-devices \(limit))")
  }

  /// A user's session signing in to `account` on this node: at most `--account-max-sessions` at once.
  func sessionBudget(_ account: String, method: String) -> ResponseError? {
    let limit = appOverrides(of: account)?.accountMaxSessions ?? configuration.accountMaxSessions
    let open = sessionsOfAccount(account).count
    guard open >= limit else { return nil }
    return quotaRefusal(
      method: method, quota: "sessions", limit: limit, retryAfter: nil,
      "the account has \(open) sessions on this node (--account-max-sessions \(limit)); close one")
  }

  // MARK: - Input held after a rate refusal

  /// Bytes a user's session sent (one read): charged to its account's `--account-input-rate`; past it the session
  /// is not read until the budget refills (at most a second at a time). Nothing is refused — what it sends waits in
  /// the kernel — so an account sending large messages it knows will be refused (a huge `info`) costs the node at
  /// most this many bytes a second of reading and parsing (#42).
  func chargeInput(_ bytes: Int, on session: Session) {
    guard let principal = session.principal, !principal.isAdmin, let account = principal.account else { return }
    guard let wait = inputLimiter.take(account, now: clock.now(), cost: Double(bytes) / 1024) else { return }
    holdInput(session, seconds: wait)
  }

  /// A user's session refused for `--account-rate` is not read again until the account's budget has refilled (at
  /// most a second): a client that ignores `retryAfter` and keeps sending costs the node no more reading and parsing
  /// than one that waits, and what it sends meanwhile waits in the kernel's buffers, not the node's (#42).
  func holdInput(_ session: Session, seconds: Double) {
    guard session.rateHold == nil, !session.outbound.closing, !session.isGone else { return }
    let timer = loop.makeTimer()
    timer.keepsLoopAlive = false
    session.rateHold = timer
    session.beginAsync()
    session.stream.stopReading()
    let milliseconds = UInt64((min(max(seconds, 0.001), 1) * 1000).rounded(.up))
    timer.start(afterMilliseconds: milliseconds, repeatEvery: 0) { [weak self, weak session] in
      guard let self, let session else { return }
      self.releaseHold(session)
    }
  }

  private func releaseHold(_ session: Session) {
    guard let timer = session.rateHold else { return }
    timer.close()
    session.rateHold = nil
    let last = session.endAsync()
    guard !session.isGone, !session.outbound.closing else { return }
    // Output back-pressure may hold reading too: the outbound state machine resumes it once the client drains.
    if !session.outbound.inputPaused { session.stream.startReading() }
    if last { services.resumeInput(session) }
  }
}
