import TipsAuth
import TipsEngine
import TipsHosted
import TipsJSON
import TipsProtocol
import TipsRecords
import TipsStore
import TipsSync
import TipsSystem
import TipsTransport

/// Sync across devices, wired into the server (`--sync`): the merge model (`TipsSync.SyncModel`) beside the engine,
/// and the pump that moves operations between the outbox and PostgreSQL on the same loop.
///
/// - A local mutation (``Services/record(_:)``) is turned into operations and this device's contributions; their
///   writes join the turn's, so a change and its outbox entry commit in one transaction. After a successful commit the
///   pump is kicked, and pushes only what is committed.
/// - Rows the pump pulls are merged; the engine mutations that brings go through ``Services/recordMerged(_:)`` —
///   subscribers are notified exactly as for a local change — and commit with the cursor they advance to.
/// - Synced changes are refused (-32012) while the outbox is full; everything else, reads included, keeps working.
final class SyncService: SyncPumpDelegate {
  /// Read again from the datastore after a failed commit (``restore(from:)``).
  private(set) var model: SyncModel
  /// Where it syncs: PostgreSQL, or a hosted node (`--sync wss://…`).
  private enum Peer {
    case postgres(SyncServer)
    case node(WebSocketURL, SyncTokenSource)
  }
  private let peer: Peer
  /// Where it syncs, without secrets.
  let redactedServer: String
  private let configuration: SyncConfiguration
  private unowned let services: Services
  /// The daemon's one tenant, whose engine the model is kept equal to.
  private unowned let tenant: Tenant
  private var pump: SyncPump?
  /// Outbox entries up to this seq are committed to the datastore (may be pushed).
  private var committedThrough: Int64

  /// Loads the model and, for a datastore that never synced, commits its identity and its existing state as this
  /// device's contribution.
  init(configuration: SyncConfiguration, store: Datastore, services: Services, tenant: Tenant) throws(ServerError) {
    self.configuration = configuration
    self.services = services
    self.tenant = tenant
    let engine = tenant.engine
    do {
      let snapshot = try store.loadSync()
      var account = configuration.account
      var device = configuration.device
      if SyncConfiguration.isNode(configuration.server) {
        let url: WebSocketURL
        switch WebSocketURL.parse(configuration.server) {
        case .success(let parsed): url = parsed
        case .failure(let error): throw SyncSetupError(error.message)
        }
        guard let source = configuration.tokenSource else {
          throw SyncSetupError("a hosted node needs the user's token: --sync-token-command CMD or --sync-token-file F")
        }
        account = try Self.nodeAccount(
          given: configuration.account, source: source, stored: snapshot.meta[SyncModel.MetaKey.account])
        if let given = device, !given.hasPrefix(SyncPushRequest.devicePrefix) {
          device = SyncPushRequest.devicePrefix + given
        }
        if snapshot.meta[SyncModel.MetaKey.device] == nil && device == nil {
          device = SyncPushRequest.devicePrefix + Self.randomHex()
        }
        peer = .node(url, source)
        redactedServer = url.description
      } else {
        let server = try SyncServer(configuration.server)
        peer = .postgres(server)
        redactedServer = server.redacted
      }
      model = try SyncModel(
        engine: engine, snapshot: snapshot, account: account, device: device,
        outboxLimit: configuration.outboxLimit,
        isSynced: { [unowned engine] key in engine.definition(of: Engine.tipID(ofRecordKey: key))?.sync != .local })
      if case .node = peer, let problem = SyncPushRequest.deviceProblem(model.device) {
        throw SyncSetupError(
          "this datastore is device \"\(model.device)\" of its account, which cannot sync through a hosted node (a "
            + "device id there \(problem)); use another --datastore")
      }
      let first = model.bootstrap(wallNow: System.wallClockSeconds())
      try store.commit([], sync: first.writes)
    } catch let error as SyncSetupError {
      throw ServerError("--sync: \(error.message)")
    } catch {
      throw ServerError("--sync: \(error)")
    }
    committedThrough = model.clock.last.rawValue
    services.logger.info(
      "sync configured",
      [
        ("server", redactedServer), ("account", model.account), ("device", model.device),
        ("outbox", String(model.outboxCount)),
      ])
  }

  /// The account a device syncing through a hosted node syncs: the token's `sub` (refused when `--account` names
  /// another); when the token cannot be read at start (offline, the command failing), `--account` or the account the
  /// datastore already syncs — the node checks it at every sign-in.
  static func nodeAccount(given: String, source: SyncTokenSource, stored: String?) throws(SyncSetupError) -> String {
    let subject: String?
    var unreadable: String?
    do {
      subject = try tokenSubject(try source.read())
    } catch {
      subject = nil
      unreadable = error.message
    }
    if let subject {
      if !given.isEmpty && given != subject {
        throw SyncSetupError(
          "--account \(given), but the token is account \"\(subject)\"'s (its sub): a device syncs its user's own account"
        )
      }
      return subject
    }
    if !given.isEmpty { return given }
    if let stored { return stored }
    throw SyncSetupError(
      "cannot learn the account: the token's sub is unreadable (\(unreadable ?? "no sub")) and the datastore never "
        + "synced; pass --account ID")
  }

  /// A JWT's `sub`, read without checking the signature (the node checks it; this only names the account).
  static func tokenSubject(_ token: String) throws(SyncTransportError) -> String {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])),
      case .object(let claims)? = try? JSONParser.parse(payload), let subject = claims["sub"]?.stringValue,
      !subject.isEmpty
    else { throw SyncTransportError("the token is not a JWT with a sub") }
    return subject
  }

  static func randomHex() -> String {
    var generator = SystemRandomNumberGenerator()
    let hex = Array("0123456789abcdef")
    return String((0..<32).map { _ in hex[Int(generator.next() % 16)] })
  }

  func start(loop: any EventLoop) {
    var pumpConfiguration = SyncPump.Configuration(account: model.account, device: model.device)
    pumpConfiguration.retryMax = configuration.retryMax
    let transport: any SyncTransport
    switch peer {
    case .postgres(let server):
      transport = PGSyncTransport(loop: loop, server: server, account: model.account, device: model.device)
    case .node(let url, let source):
      transport = NodeSyncTransport(
        loop: loop, url: url, tokenSource: source, account: model.account, device: model.device)
    }
    let pump = SyncPump(
      loop: loop, configuration: pumpConfiguration, transport: transport, delegate: self,
      wallClock: System.wallClockSeconds, logger: services.logger)
    self.pump = pump
    pump.start()
  }

  func stop() {
    pump?.stop()
    pump = nil
  }

  /// A refusal for a synced change while the outbox is full (logged), else nil.
  func refusal(for method: String) -> ResponseError? {
    guard model.isOutboxFull, Messages.traits(of: method).syncs else { return nil }
    services.logger.warning(
      "sync outbox full; refusing a synced change",
      [("method", method), ("limit", String(model.outboxLimit))])
    return .syncOutboxFull(method: method, limit: model.outboxLimit)
  }

  // MARK: Local changes

  /// A local mutation was recorded: queue its operations; bring the engine to the merged values.
  func recordedLocal(_ mutation: Mutation) {
    let effects = model.recordLocal(mutation.writes, wallNow: System.wallClockSeconds())
    apply(effects)
  }

  /// Before the turn's commit: the model's clock and epoch, once per commit.
  func beforeCommit() {
    let writes = model.takeMetaWrites()
    if !writes.isEmpty { services.turn.stageSync(writes) }
  }

  /// After a failed commit, with the engine read back: the model — its outbox, this device's contributions, its
  /// clock — is read back from the datastore too, so no operation of a change the engine undid is ever pushed.
  func restore(from store: Datastore) throws(DatastoreError) {
    let engine = tenant.engine
    let snapshot = try store.loadSync()
    do {
      model = try SyncModel(
        engine: engine, snapshot: snapshot, account: model.account, device: model.device,
        outboxLimit: configuration.outboxLimit,
        isSynced: { [unowned engine] key in engine.definition(of: Engine.tipID(ofRecordKey: key))?.sync != .local })
    } catch {
      services.logger.error("sync: cannot read the sync state back after a failed commit", [("error", "\(error)")])
    }
  }

  /// After the turn's commit: what is now committed may be pushed.
  func afterCommit(_ success: Bool) {
    guard success else { return }
    committedThrough = model.clock.last.rawValue
    pump?.kick()
  }

  private func apply(_ effects: SyncEffects) {
    guard !effects.isEmpty else { return }
    for mutation in effects.mutations { services.recordMerged(mutation, in: tenant) }
    services.turn.stageSync(effects.writes)
    services.requestEndOfTurn()
  }

  // MARK: SyncPumpDelegate

  func outboxBatch(_ limit: Int) -> [PendingOperation] {
    model.outboxBatch(limit).filter { $0.seq <= committedThrough }
  }

  var cursor: Int64 { model.cursor }

  func received(_ rows: [OperationRow]) {
    guard let last = rows.last else { return }
    let operations = rows.map { SyncOperation(device: $0.device, seq: $0.seq, payload: $0.payload) }
    let skipped = operations.filter { $0 == nil }.count
    if skipped > 0 {
      services.logger.warning("sync: skipped operations this tipsd does not understand", [("count", String(skipped))])
    }
    apply(model.applyRemote(operations, cursor: last.cursor, wallNow: System.wallClockSeconds()))
  }

  func receivedSnapshot(_ state: String, cursor: Int64) -> Bool {
    let snapshot: AccountSnapshot
    do {
      snapshot = try AccountSnapshot(json: try JSONParser.parse(state))
    } catch {
      services.logger.error(
        "sync: the account's snapshot is unreadable; operations before it cannot be merged",
        [("cursor", String(cursor)), ("error", "\(error)")])
      return false
    }
    apply(
      model.mergeSnapshot(
        rows: snapshot.rows, meta: snapshot.meta, donations: snapshot.donations, cursor: snapshot.cursor,
        wallNow: System.wallClockSeconds()))
    return true
  }

  func committed(_ seqs: [Int64]) {
    apply(model.pushed(seqs))
  }

  // MARK: Status

  func status() -> SyncStatusRequest.Response {
    let now = System.wallClockSeconds()
    return SyncStatusRequest.Response(
      enabled: true, state: pump.map { $0.state.rawValue } ?? "stopped", server: redactedServer,
      account: model.account, device: model.device, outbox: model.outboxCount, outboxLimit: model.outboxLimit,
      lagSeconds: model.oldestQueued.map { max(0, now - $0) } ?? 0, cursor: model.cursor,
      lastPushAt: pump?.lastPushAt, lastPullAt: pump?.lastPullAt, lastError: pump?.lastError)
  }
}
