public import TipsEngine
public import TipsRecords
public import TipsSync

extension OperationRow {
  /// The decoded operation; nil for a kind this build does not understand.
  public var operation: SyncOperation? { SyncOperation(device: device, seq: seq, payload: payload) }
}

/// Builds a hosted account's merge model from what PostgreSQL holds: its snapshot and the operations stored after it.
public enum AccountLoader {
  /// Loads `account` into `engine` — a fresh engine with the catalog registered and the account as its install id —
  /// as node `device`: the snapshot's merged state, then every later operation (this node's own included), then the
  /// node's new life begins. Returns the model and how many stored operations this build could not read.
  ///
  /// `decides`: whether the load may take decisions of the node's own — a display budget reached by merged displays
  /// invalidates the record, an operation queued for the next push — as serving the account does. A load that makes
  /// a snapshot (``snapshot(account:engine:snapshot:operations:isSynced:)``) takes none: a snapshot holds what the
  /// stored operations say, nothing else.
  ///
  /// `isSynced` (every record by default, as hosted mode stores them): a hosted account has one state, so a tip whose
  /// definition says `"sync": "local"` is stored with it too — that setting keeps a device daemon's record on its
  /// device, and device daemons of the account ignore operations of such tips.
  public static func load(
    account: String, device: String, engine: Engine, snapshot: AccountSnapshot?, operations: [OperationRow],
    wallNow: Double, decides: Bool = true, isSynced: @escaping (String) -> Bool = { _ in true },
    decoded: [SyncOperation?]? = nil
  ) throws(HostedError) -> (model: SyncModel, skipped: Int) {
    let snapshot = snapshot ?? .empty
    var sync = SyncSnapshot()
    sync.meta = snapshot.meta
    sync.meta[SyncModel.MetaKey.account] = account
    sync.meta[SyncModel.MetaKey.device] = device
    sync.meta[SyncModel.MetaKey.cursor] = String(snapshot.cursor)
    sync.state = snapshot.rows
    let model: SyncModel
    do {
      model = try SyncModel(
        engine: engine, snapshot: sync, account: account, device: device, outboxLimit: .max, role: .hosted,
        isSynced: isSynced)
    } catch {
      throw HostedError("account \(account): \(error.message)")
    }
    model.checksBudgets = decides
    _ = model.applyLoadedState(donations: snapshot.donations)
    let decoded = decoded ?? operations.map(\.operation)
    let last = operations.last?.cursor ?? snapshot.cursor
    _ = model.applyLoaded(decoded, cursor: max(last, snapshot.cursor), wallNow: wallNow)
    return (model, decoded.filter { $0 == nil }.count)
  }

  /// The instant the account's stored state was last brought to — its newest operation's, or its snapshot's clock —
  /// nil when it holds neither.
  public static func lastInstant(snapshot: AccountSnapshot?, operations: [SyncOperation?]) -> Timestamp? {
    var last = snapshot?.meta[SyncModel.MetaKey.clock].flatMap { Int64($0) } ?? 0
    for case let operation? in operations { last = max(last, operation.hlc.rawValue) }
    return last > 0 ? HLC(rawValue: last).seconds : nil
  }

  /// A hosted account loaded as of its last instant, its engine's clock held there.
  public struct Loaded {
    public let engine: Engine
    public let model: SyncModel
    /// Stored operations this build could not read.
    public let skipped: Int
    let clock: HeldClock

    /// Lets time move from the account's last instant to now: the mutations of each time-driven change in between,
    /// at its own instant (``Mutation/at``; exposures open at it), then the one at now — what a node that had served
    /// the account all along would have recorded. The node records them, in order, once the account is in place.
    public func replayTime() -> [Mutation] {
      clock.release()
      return engine.advanceTimeInSteps()
    }
  }

  /// ``load(account:device:engine:snapshot:operations:wallNow:decides:isSynced:decoded:)`` as of the account's last
  /// instant (``lastInstant(snapshot:operations:)``): `makeEngine` builds the fresh engine on a clock (wrapping
  /// `clock`) held there, so the account's state is worked out as it stood then; ``Loaded/replayTime()`` then
  /// replays what time changed since — a schedule opening, a cooldown or a window ending while no node held the
  /// account — at its own instants, not at the load.
  public static func loadAsOfLastInstant(
    account: String, device: String, clock: any EngineClock, snapshot: AccountSnapshot?,
    operations: [OperationRow], wallNow: Double, makeEngine: (any EngineClock) throws -> Engine
  ) throws -> Loaded {
    let decoded = operations.map(\.operation)
    let held = HeldClock(clock)
    held.hold(at: lastInstant(snapshot: snapshot, operations: decoded))
    let engine = try makeEngine(held)
    let (model, skipped) = try load(
      account: account, device: device, engine: engine, snapshot: snapshot, operations: operations, wallNow: wallNow,
      decoded: decoded)
    // The node's own operations from now on start past `since`; those before it, pulled back, are merged as others'
    // are. The held clock put `since` just past the account's last stored instant — below what this node name issued
    // after it and had not stored when it was read: an answer given up on (whose backend may still commit) or a
    // previous life's commit landing after this load. Pulled back, such an operation would be skipped as already
    // applied, while every other node merges it: this node apart for good (seed 112, #44). Past now, it is merged.
    model.since = max(model.since, model.clock.next(physicalSeconds: clock.now()).rawValue)
    return Loaded(engine: engine, model: model, skipped: skipped, clock: held)
  }

  /// The snapshot of `account` after `operations` (stored after `snapshot`): a pure function of what PostgreSQL holds,
  /// computed on `engine`, a fresh engine with the catalog registered.
  public static func snapshot(
    account: String, engine: Engine, snapshot: AccountSnapshot?, operations: [OperationRow],
    isSynced: @escaping (String) -> Bool = { _ in true }
  ) throws(HostedError) -> AccountSnapshot {
    let (model, _) = try load(
      account: account, device: "snapshot", engine: engine, snapshot: snapshot, operations: operations, wallNow: 0,
      decides: false, isSynced: isSynced)
    return AccountSnapshot(model: model)
  }
}
