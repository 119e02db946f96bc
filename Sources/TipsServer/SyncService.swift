import TipsEngine
import TipsHosted
import TipsJSON
import TipsProtocol
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
  /// Methods whose changes sync, refused while the outbox is full.
  static let syncedMethods: Set<String> = [
    DonateRequest.method, DisplayedRequest.method, InvalidateRequest.method, PerformActionRequest.method,
    ResetEligibilityRequest.method, SetParameterRequest.method, ResetDatastoreRequest.method,
  ]

  /// Read again from the datastore after a failed commit (``restore(from:)``).
  private(set) var model: SyncModel
  let server: SyncServer
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
      server = try SyncServer(configuration.server)
      model = try SyncModel(
        engine: engine, snapshot: try store.loadSync(), account: configuration.account, device: configuration.device,
        outboxLimit: configuration.outboxLimit,
        isSynced: { [unowned engine] key in engine.definition(of: Engine.tipID(ofRecordKey: key))?.sync != .local })
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
        ("server", server.redacted), ("account", model.account), ("device", model.device),
        ("outbox", String(model.outboxCount)),
      ])
  }

  func start(loop: any EventLoop) {
    var pumpConfiguration = SyncPump.Configuration(server: server, account: model.account, device: model.device)
    pumpConfiguration.retryMax = configuration.retryMax
    let pump = SyncPump(
      loop: loop, configuration: pumpConfiguration, delegate: self, wallClock: System.wallClockSeconds,
      logger: services.logger)
    self.pump = pump
    pump.start()
  }

  func stop() {
    pump?.stop()
    pump = nil
  }

  /// A refusal for a synced change while the outbox is full (logged), else nil.
  func refusal(for method: String) -> ResponseError? {
    guard model.isOutboxFull, Self.syncedMethods.contains(method) else { return nil }
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

  func outboxBatch(_ limit: Int) -> [(seq: Int64, payload: String)] {
    model.outboxBatch(limit).filter { $0.seq <= committedThrough }
  }

  var cursor: Int64 { model.cursor }

  func received(_ rows: [SyncPump.Row]) {
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
      enabled: true, state: pump.map { $0.state.rawValue } ?? "stopped", server: server.redacted,
      account: model.account, device: model.device, outbox: model.outboxCount, outboxLimit: model.outboxLimit,
      lagSeconds: model.oldestQueued.map { max(0, now - $0) } ?? 0, cursor: model.cursor,
      lastPushAt: pump?.lastPushAt, lastPullAt: pump?.lastPullAt, lastError: pump?.lastError)
  }
}
