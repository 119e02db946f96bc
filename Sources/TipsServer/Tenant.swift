import TipsEngine
import TipsProtocol
import TipsRecords
import TipsStore
import TipsSync

/// One account's state on this daemon: its engine and what is kept beside it — its subscriptions, its lifecycle
/// history's recorder and, in hosted mode, its merge model and the history entries its turn staged.
///
/// A daemon that serves one user's state has exactly one tenant (`account` nil), made at start and kept for the
/// daemon's life. A hosted node (`tipsd serve --hosted`) holds one per resident account, made when the account is
/// loaded from PostgreSQL and dropped when it is evicted or erased (see `HostedService`).
///
/// Loop thread only.
final class Tenant {
  /// The account (hosted mode); nil for a daemon serving one user's state.
  let account: String?
  /// Replaced when a hosted account is read again after a failed commit (its subscriptions stay).
  var engine: Engine
  let subscriptions: SubscriptionRegistry
  var history: HistoryRecorder
  /// `--sync`: the device's sync across devices (the local tenant only).
  var sync: SyncService?
  /// Replies to changes made with an `idempotencyKey`.
  let idempotency = IdempotencyMemory()

  // MARK: Hosted mode

  /// The account's merge model: a hosted node is one more device of every account it serves.
  var model: SyncModel?
  /// History entries this turn recorded for the account, committed with its operations.
  @exclusivity(unchecked) var pendingHistory = HistoryBatch()
  /// Hosted: the history recorder's memory as of the account's last successful commit — what PostgreSQL's history
  /// says each tip last was. A reload after a failed commit starts its recorder from it, so the reload's reversals
  /// (back to what was stored) are not recorded as changes that never happened.
  var committedHistory: HistoryState?
  /// The cursor of the account's newest snapshot this node knows of (read at load, or written by its compactor).
  var snapshotCursor: Int64 = 0
  /// Whether the variants the engine assigned are stored as the account's (done with its first commit after a load).
  var variantsStored = false
  /// Whether the account is in this turn's list of accounts to commit.
  var touched = false
  /// Hosted mode: the seqs of its operations in commits still in flight — not sent again by a later commit (#42: were
  /// the first commit's part refused, a key another node committed first, the later one would store its operations
  /// without their key).
  var seqsInFlight: Set<Int64> = []
  /// Whether anything changed this turn (for its `inspect/changed` watchers).
  var changed = false
  /// Devices' operations pushed through this node this turn (`sync/push`), committed with the account's own, each
  /// push answered once committed.
  var devicePushes: [DevicePush] = []
  /// Hosted: the bytes of the account's merged state (``HostedService/measureState(of:)``), plus what this node
  /// committed since it was measured; measured again whenever that sum reaches `--account-max-state-bytes`.
  var stateBytes = 0
  /// Whether anything was committed since `stateBytes` was measured.
  var stateBytesGrew = false
  /// Hosted: history rows this node committed for the account in the UTC day `historyDay` (days since the epoch).
  var historyRowsToday = 0
  var historyDay = 0
  /// Hosted: which session each device id pushed through this node belongs to (the first that pushed it while it
  /// stays connected): another session's push of that id is refused, never dropped in silence.
  var deviceSessions: [String: UInt64] = [:]
  /// The turn, whose count of durable work the account's history entries add to.
  private unowned let turn: Turn

  init(
    account: String?, engine: Engine, history: HistoryRecorder, subscriptionIDs: SubscriptionIDs, turn: Turn
  ) {
    self.account = account
    self.engine = engine
    self.history = history
    self.subscriptions = SubscriptionRegistry(ids: subscriptionIDs)
    self.turn = turn
  }

  /// For log lines.
  var name: String { account ?? "-" }
}

extension Tenant: HistorySink {
  func stage(historyEntry: HistoryEvent) {
    pendingHistory.append(historyEntry)
    turn.noteStaged()
  }

  func stageDonation(cursor: Int64, event: String, at: Double) {
    pendingHistory.appendDonation(cursor: cursor, event: event, at: at)
    turn.noteStaged()
  }
}

/// Subscription ids (`sub-1`, `sub-2`, …), unique across every tenant of the daemon: an admin session may hold
/// subscriptions in several accounts, and one account's ids mean nothing in another's.
final class SubscriptionIDs {
  private(set) var issued = 0

  func next() -> String {
    issued += 1
    return "sub-\(issued)"
  }

  /// Whether this daemon ever issued `id`.
  func isIssued(_ id: String) -> Bool {
    guard id.hasPrefix("sub-"), let number = Int(id.dropFirst(4)) else { return false }
    return number >= 1 && number <= issued
  }
}

/// One `sync/push`: a device's checked operations and its reply (the account's last cursor once committed).
struct DevicePush {
  var device: String
  var operations: [PendingOperation]
  var reply: (Result<Int64, ResponseError>) -> Void
}
