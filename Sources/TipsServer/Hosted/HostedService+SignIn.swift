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

// Hosted mode's sessions: signing in (tokens, the admin, refresh, expiry) and which account each request acts on.

extension Principal {
  /// A user signed in by a verified token.
  static func user(_ entry: SignInGuard.Remembered) -> Principal {
    .user(
      account: entry.subject, expiresAt: entry.expiresAt, acceptedUntil: entry.acceptedUntil,
      issuedAt: entry.issuedAt)
  }
}

extension HostedService {
  // MARK: - Signing in

  /// Why a sign-in was refused, as far as the connection's count of failed sign-ins is concerned.
  enum SignInFailure {
    /// Held back before the token was judged (the node's budget of failed checks spent, the peer over its rate):
    /// not a failed sign-in.
    case heldBack
    /// The token was refused (claims, erasure); its signature was not found bad.
    case refused
    /// The token's signature did not verify.
    case badSignature
  }

  /// Who `token` signs in, for a session connected from `peer`: as ``authenticate(_:connectionFailed:)``, with
  /// failures charged to the peer and a peer over its rate refused before any signature is checked (when per-peer
  /// limits are on: a node behind a balancer sees one peer and has them off).
  func authenticate(
    _ token: String, app: String, peer: String?, connectionFailed: Bool
  ) -> (result: Result<Principal, ResponseError>, failure: SignInFailure?) {
    guard let peer, let (limiter, now) = signInLimiter, limiter.limits.ratePerPeer > 0 else {
      return authenticating(token, app: app, connectionFailed: connectionFailed)
    }
    if let wait = limiter.retryAfter(peer, now: now()) {
      let refusal = ConnectionRefusal.rate(limit: limiter.limits.ratePerPeer, retryAfter: wait)
      return (
        .failure(.unauthorized(reason: "tooManyAttempts", "too many failed sign-ins: \(refusal)", retryAfter: wait)),
        .heldBack
      )
    }
    let outcome = authenticating(token, app: app, connectionFailed: connectionFailed)
    if let failure = outcome.failure, failure != .heldBack { limiter.charge(peer, now: now()) }
    return outcome
  }

  /// Who `token` signs in on a connection that has not failed a signature check (the WebSocket upgrade's token).
  func authenticate(_ token: String, app: String = AccountKey.defaultApp) -> Result<Principal, ResponseError> {
    authenticating(token, app: app, connectionFailed: false).result
  }

  /// Who `token` signs in: the admin, or a user whose account is its `sub` — at a bounded cost whatever arrives. Its
  /// size is checked first (nothing longer than a token is compared or parsed); the admin token in constant time;
  /// a token verified before is taken from memory; a new one's claims are checked before its signature, and its
  /// signature — on a connection that already failed one — only within the node's budget of failed checks
  /// (``SignInGuard``). The `sub` a token claims is never charged: a forgery naming someone costs its sender only. A
  /// token issued before its account was erased is refused while the tombstone stands.
  ///
  /// `app`'s keys verify it (#48), and the account it signs in is keyed by (app, sub) (``AccountKey``): a token of
  /// one app never signs in to another, even one remembered (the memory is keyed by app and token).
  func authenticating(
    _ token: String, app: String, connectionFailed: Bool
  ) -> (result: Result<Principal, ResponseError>, failure: SignInFailure?) {
    // An app this deployment does not serve (a WebSocket path naming one) signs no one in: its tokens would
    // otherwise be checked with default's keys into accounts of no app.
    guard serves(app) else {
      return (
        .failure(.invalidParams("no app \"\(app)\" here (this deployment serves \(appIDs.joined(separator: ", ")))")),
        .refused
      )
    }
    let verifier = verifier(of: app)
    let maxBytes = verifier.maxTokenBytes
    guard token.utf8.count <= maxBytes else {
      return (.failure(.unauthorized(reason: "tooLarge", "the token is longer than \(maxBytes) bytes")), .refused)
    }
    if let adminToken, AccessPolicy.constantTimeEqual(token, adminToken) { return (.success(.admin), nil) }
    let now = System.wallClockSeconds()
    let remembered = app == AccountKey.defaultApp ? token : app + "\u{0}" + token
    if let known = signInGuard.remembered(remembered, now: now) {
      if let refusal = erasure(of: known.subject, issuedAt: known.issuedAt) { return (.failure(refusal), .refused) }
      return (.success(.user(known)), nil)
    }
    var heldBack = false
    let result = verifier.verify(token, now: now) { [unowned self] (_: VerifiedToken) -> AuthError? in
      guard let wait = self.signInGuard.mayCheck(connectionFailed: connectionFailed, now: now) else { return nil }
      heldBack = true
      return AuthError(
        .throttled,
        "this connection presented a forged token and the node is refusing more for \(Self.seconds(wait)) s (too "
          + "many forged ones arrived); retry then, or on a new connection")
    }
    switch result {
    case .success(let verified):
      let entry = SignInGuard.Remembered(
        subject: AccountKey.compose(app: app, subject: verified.subject), expiresAt: verified.expiresAt,
        acceptedUntil: verified.acceptedUntil, issuedAt: verified.issuedAt)
      signInGuard.succeeded(remembered, entry, now: now)
      if let refusal = erasure(of: entry.subject, issuedAt: verified.issuedAt) {
        return (.failure(refusal), .refused)
      }
      return (.success(.user(entry)), nil)
    case .failure(let error):
      var failure = SignInFailure.refused
      var retryAfter: Double?
      if error.code == .badSignature {
        signInGuard.failed(now: now)
        failure = .badSignature
      } else if heldBack {
        failure = .heldBack
        retryAfter = max(0.001, signInGuard.budgetWait(now: now))
      }
      return (.failure(.unauthorized(reason: error.code.rawValue, error.message, retryAfter: retryAfter)), failure)
    }
  }

  /// A sign-in attempt on `session` (`initialize`'s token, or `auth/refresh`'s): refreshes are rationed per
  /// connection, and a connection that failed too many sign-ins is closed after this reply. A refusal before the
  /// token was judged (``SignInFailure/heldBack``) is not a failed sign-in.
  func signInAttempt(_ token: String, on session: Session, refresh: Bool) -> Result<Principal, ResponseError> {
    let now = System.monotonicSeconds()
    if refresh, let wait = session.signIn.takeRefresh(now: now, perMinute: configuration.refreshesPerMinute) {
      return .failure(
        .unauthorized(
          reason: "tooManyAttempts",
          "at most \(Int(configuration.refreshesPerMinute)) auth/refresh a minute on one connection",
          retryAfter: wait))
    }
    let (result, failure) = authenticate(
      token, app: session.app, peer: session.peer, connectionFailed: session.signIn.badSignatures > 0)
    guard let failure, failure != .heldBack else { return result }
    if failure == .badSignature { session.signIn.badSignatures += 1 }
    session.signIn.failures += 1
    if session.signIn.failures >= configuration.maxFailedSignInsPerConnection {
      logger.info(
        "hosted: closing a connection after repeated failed sign-ins",
        [("connection", String(session.id)), ("failures", String(session.signIn.failures))])
      closeSession(
        session,
        .unauthorized(
          reason: "tooManyAttempts",
          "\(session.signIn.failures) failed sign-ins on this connection; it is closed (open a new one)"))
    }
    return result
  }

  /// Refused while the account's tombstone stands for a token issued before the erasure (`iat` not after it), or
  /// one without `iat` (nothing says it is newer).
  func erasure(of account: String, issuedAt: Double?) -> ResponseError? {
    guard node.erasures.refuses(account, issuedAt: issuedAt, now: System.wallClockSeconds()) else { return nil }
    return .unauthorized(
      reason: "deleted",
      "the account was deleted; a token issued before the deletion (or one without iat) is refused while its "
        + "tombstone stands")
  }

  static func seconds(_ value: Double) -> String { String(Double(Int((value * 1000).rounded(.up))) / 1000) }

  /// A session signed in (or its token was refreshed): its expiry is watched, its account made resident and counted
  /// from its first session. A session signs in one account for its life: a token for another (or the admin token on
  /// a user's session, or the reverse) is refused, not switched to.
  func signedIn(_ session: Session, as principal: Principal) -> ResponseError? {
    let previous = session.principal
    if let previous, previous.account != principal.account || previous.isAdmin != principal.isAdmin {
      return .unauthorized(
        reason: "subjectChanged",
        "the session is signed in as another account; a connection signs in one account (open another connection)")
    }
    if previous == nil, case .user(let account, _, _, _) = principal,
      let refusal = sessionBudget(account, method: InitializeRequest.method)
    {
      // Not signed in, and closed after the reply: a flood of sessions never holds connections the node's other
      // users need.
      closeSession(session, refusal)
      return refusal
    }
    session.principal = principal
    sessionsByID[session.id] = session
    signInDeadlines.set(session.id, nil)
    switch principal {
    case .user(let account, _, let until, _):
      expiries.set(session.id, until)
      if previous == nil {
        // An erased account signed in with a token issued after the erasure starts again (empty) first.
        if awaitsReopening(account), let issuedAt = principal.issuedAt {
          reopen(account, issuedAt: issuedAt)
        } else {
          perform(node.need(account))
        }
        node.sessionOpened(account)
      }
    case .admin:
      // The admin token does not expire: the session does, --admin-session-max after it signed in.
      if previous == nil { expiries.set(session.id, System.wallClockSeconds() + configuration.adminSessionMax) }
      if previous == nil { catalogs?.record("admin.signIn", app: nil) }
    }
    return nil
  }

  /// The loop's clock in seconds (durations: the sign-in deadline).
  var loopSeconds: Double { Double(loop.now) / 1000 }

  /// A new connection: it must sign in within `--sign-in-timeout` (unless its upgrade's token already did).
  func accepted(_ session: Session) {
    guard session.principal == nil else { return }
    sessionsByID[session.id] = session
    signInDeadlines.set(session.id, loopSeconds + configuration.signInTimeout)
  }

  /// What `initialize` answers about the sign-in.
  func signIn(of principal: Principal) -> SignIn {
    switch principal {
    case .admin: SignIn(account: nil, admin: true, expiresAt: nil)
    case .user(let account, let expiresAt, _, _):
      // The sub its user knows (the node keys another app's account by app and sub: ``AccountKey``).
      SignIn(account: AccountKey.subject(of: account), admin: false, expiresAt: expiresAt)
    }
  }

  /// The session is gone: its account may be evicted, its subscriptions go.
  func closed(_ session: Session) {
    session.rateHold?.close()
    session.rateHold = nil
    for id in session.subscriptions where fleetSubscribers[id]?.session === session { fleetSubscribers[id] = nil }
    unwatchSync(session)
    sessionsByID[session.id] = nil
    expiries.set(session.id, nil)
    signInDeadlines.set(session.id, nil)
    node.sessionGone(session.id)
    for account in session.subscribedAccounts { tenants[account]?.subscriptions.removeAll(of: session) }
    if let account = session.principal?.account { perform(node.sessionClosed(account)) }
  }

  // MARK: - Which tenant a request acts on

  /// The account a session's request acts on: the user's own, or the one an admin named (`params.account`).
  func account(for session: Session, named: String?, method: String) -> Result<String, ResponseError> {
    guard let principal = session.principal else {
      return .failure(
        .unauthorized(
          reason: "missing", "\(method): sign in first (initialize's auth.token, or a token on the connection)"))
    }
    switch principal {
    case .admin:
      guard let named else {
        return .failure(.invalidParams("\(method): params.account: an admin session names the account it acts on"))
      }
      guard AccountKey.problem(named) == nil, serves(AccountKey.app(of: named)) else {
        return .failure(
          .invalidParams("\(method): params.account: not an account id (sub, or APP/sub for an app other than default)")
        )
      }
      // An admin acts on an erased account once a user's newer token has started it again.
      if awaitsReopening(named) { return .failure(Self.deletedRefusal(named, for: session)) }
      return .success(named)
    case .user(let own, _, _, let issuedAt):
      if let named, named != own {
        return .failure(.forbidden(method: method, "a session acts on its own account only"))
      }
      if let refusal = erasure(of: own, issuedAt: issuedAt) { return .failure(refusal) }
      return .success(own)
    }
  }

  /// Whether the account is idle (its engine may be used now); else it is loaded if absent and the session is
  /// parked until it is idle — or refused, when its load failed at once.
  func ready(_ account: String, for session: Session) -> Readiness {
    if awaitsReopening(account), let issuedAt = session.principal?.issuedAt {
      // Read once its tombstone lets it be (``reopen(_:issuedAt:)``): the session waits for that.
      reopen(account, issuedAt: issuedAt)
      session.park(on: account)
      node.wait(session.id, on: account)
      return .wait
    }
    perform(node.need(account, now: loopSeconds))
    let phase = node.phase(of: account)
    if phase == .idle, let tenant = tenants[account] { return .ready(tenant) }
    if phase == .orphaned {
      // Its load failed before it could wait (PostgreSQL unreachable as the node started, say), or failed lately and
      // is backing off: answered now, not parked on a load that is not coming.
      let reason = node.failure(of: account) ?? "the account could not be read"
      return .refused(.unavailable(method: "request", retryAfter: 1, "PostgreSQL: \(reason)"))
    }
    session.park(on: account)
    node.wait(session.id, on: account)
    return .wait
  }

  /// Whether a request for an account may run now.
  enum Readiness {
    case ready(Tenant)
    /// Not yet: the session was parked until the account is idle.
    case wait
    case refused(ResponseError)
  }

  /// The account's request rate (`--account-rate`), for a user's request; nil when within it.
  func admitRate(_ account: String, session: Session) -> ResponseError? {
    guard session.principal?.isAdmin != true else { return nil }
    guard let wait = takeRate(account) else { return nil }
    holdInput(session, seconds: wait)
    let rate = Int(rate(of: account))
    return quotaRefusal(
      method: "request", quota: "rate", limit: rate, retryAfter: wait,
      "more than \(rate) requests a second for this account (--account-rate)")
  }

  /// Whether `rpc.discover` may be answered on `session`: in hosted mode only once signed in, and a user's account
  /// at most ``discoverRate`` times a second (bursts of 3) — its reply is the whole OpenRPC document, about a
  /// hundred kilobytes, so unsigned or unrationed it would turn a few bytes in into a flood out.
  func admitDiscover(_ session: Session) -> ResponseError? {
    guard let principal = session.principal else {
      return .unauthorized(
        reason: "missing", "rpc.discover: sign in first (initialize's auth.token, or a token on the connection)")
    }
    guard let account = principal.account, let wait = discoverLimiter.take(account, now: clock.now()) else {
      return nil
    }
    return .quotaExceeded(
      method: DiscoverRequest.method, quota: "rate", limit: 1, retryAfter: wait,
      "rpc.discover at most once a second for an account (the document does not change while the node runs)")
  }

  /// rpc.discover's rate per account, a second.
  static let discoverRate: Double = 1

  /// Whether an account may keep one more donation (`--account-max-donations`).
  func donationQuota(_ tenant: Tenant, method: String) -> ResponseError? {
    let kept = tenant.engine.storedDonationCount
    let limit = appOverrides(of: tenant.account ?? "")?.accountMaxDonations ?? configuration.accountMaxDonations
    guard kept >= limit else { return nil }
    return quotaRefusal(
      method: method, quota: "donations", limit: limit, retryAfter: nil,
      "the account keeps \(kept) donations (--account-max-donations \(limit))")
  }

  /// Whether a change with a new idempotency key may run (`--account-max-keys`): every key's reply is kept for
  /// `--idempotency-hours`, in memory and in PostgreSQL, so a client minting keys without end would grow both.
  func idempotencyQuota(_ tenant: Tenant, method: String) -> ResponseError? {
    let limit = appOverrides(of: tenant.account ?? "")?.accountMaxKeys ?? configuration.accountMaxIdempotencyKeys
    guard tenant.idempotency.count >= limit else { return nil }
    let window = services.configuration.idempotencyWindow
    let now = System.wallClockSeconds()
    tenant.idempotency.forget(before: now - window)
    guard tenant.idempotency.count >= limit else { return nil }
    let retryAfter = max(0, (tenant.idempotency.oldest ?? now) + window - now)
    return quotaRefusal(
      method: method, quota: "idempotencyKeys", limit: limit, retryAfter: retryAfter,
      "the account holds \(tenant.idempotency.count) idempotency keys of the last --idempotency-hours "
        + "(--account-max-keys \(limit))")
  }
}
