public import TipsRecords

/// A hosted node's connections to where accounts are kept: commits, reads, and the fleet's notifications.
public enum Link: String, Sendable, CaseIterable {
  case writer, reader, listener
}

/// Where a hosted node keeps every account: PostgreSQL in production (``HostedStore``), or memory
/// (``MemoryHostedStore``: `tipsd serve --hosted memory:`, the in-process tests and the fuzzers). Every call completes
/// later, on the node's loop, never inside the call; the types are ``HostedStore``'s.
public protocol HostedStorage: AnyObject {
  /// A fleet notification arrived (another node's or device's change, an erasure, a catalog reload).
  var onNotice: ((HostedStore.Notice) -> Void)? { get set }
  /// The store became able (true) or unable (false) to commit.
  var onWritableChange: ((Bool) -> Void)? { get set }
  /// One of its links became ready (true) or not (false): after the listener is ready again, what was committed
  /// while it was not may never have been heard.
  var onLinkChange: ((Link, Bool) -> Void)? { get set }

  /// Whether commits can be sent now.
  var isWritable: Bool { get }
  /// Whether accounts can be read now.
  var isReadable: Bool { get }
  /// Whether fleet notifications are heard now.
  var isListening: Bool { get }
  /// Whether the stored schema is newer than this build (nothing can be served).
  var isIncompatible: Bool { get }
  /// The last error, for `/healthz` and logs.
  var lastError: String? { get }
  /// Commits sent and not yet answered.
  var commitsInFlight: Int { get }
  /// Seconds the oldest commit in flight has waited (nil: none waits).
  var oldestCommitAge: Double? { get }
  /// Where the accounts are, without secrets (`sync/status`, logs).
  var serverDescription: String { get }

  func start()
  func stop()

  // MARK: Writes

  /// Commits every account's changes (each account once) in one transaction; per account its last operation cursor
  /// and each history chunk's first cursor (-1 for an account erased meanwhile: nothing of it was stored).
  func commit(
    _ changes: [HostedStore.AccountChanges],
    completion: @escaping (Result<[String: HostedStore.Committed], HostedError>) -> Void)
  /// Stores a snapshot unless a newer one is there.
  func writeSnapshot(
    account: String, _ snapshot: AccountSnapshot, completion: @escaping (Result<Void, HostedError>) -> Void)
  /// Erases an account, leaves its tombstone for `erasureDays`, tells the fleet.
  func deleteAccount(
    _ account: String, erasureDays: Double, completion: @escaping (Result<Void, HostedError>) -> Void)
  /// Tells every node the catalog was reloaded.
  func notifyCatalog(version: String)
  /// Deletes at most `limit` history chunks whose newest entry is older than `cutoff`; how many went.
  func pruneHistory(before cutoff: Double, limit: Int, completion: @escaping (Result<Int, HostedError>) -> Void)
  /// Makes an account from an export (refused when it holds anything); lifts its tombstone.
  func importAccount(
    _ account: String, snapshot: AccountSnapshot, history: [HostedStore.HistoryChunk],
    completion: @escaping (Result<Void, HostedError>) -> Void)
  /// Deletes at most `limit` of the account's operations that its snapshot holds and that no device seen within
  /// `deviceDays` still has to read — but none more than `keep` behind the snapshot; how many went (readers behind
  /// them get ``HostedError/behindRetention``).
  func pruneOperations(
    of account: String, deviceDays: Double, keep: Int, limit: Int,
    completion: @escaping (Result<Int, HostedError>) -> Void)
  /// Deletes tombstones that have fallen; how many.
  func pruneErased(completion: @escaping (Result<Int, HostedError>) -> Void)
  /// Deletes at most `limit` idempotent replies made before `cutoff`; how many went.
  func pruneReplies(before cutoff: Double, limit: Int, completion: @escaping (Result<Int, HostedError>) -> Void)

  // MARK: Reads

  /// An account: its snapshot, the operations after it, its history's last cursor, whether it is erased.
  func load(_ account: String, completion: @escaping (Result<HostedStore.StoredAccount, HostedError>) -> Void)
  /// The operations of `account` after `cursor`, at most `limit`, in cursor order; ``HostedError/behindRetention``
  /// when some after `cursor` were pruned (read the account again).
  func pull(
    _ account: String, after cursor: Int64, limit: Int,
    completion: @escaping (Result<[OperationRow], HostedError>) -> Void)
  /// A device's pull (`sync/pull`): registers its cursor, then the operations after `cursor` (at most `limit`), or
  /// the account's snapshot when `cursor` is behind the operations kept; ``HostedError/deviceLimit`` for a device new
  /// to an account that syncs `maxDevices` already, none of them silent longer than `deviceDays`.
  func pullAsDevice(
    _ account: String, device: String, after cursor: Int64, limit: Int, maxDevices: Int, deviceDays: Double,
    completion: @escaping (Result<PulledOperations, HostedError>) -> Void)
  /// The account's idempotent replies made at or after `since`.
  func replies(
    of account: String, since: Double, completion: @escaping (Result<[IdempotentReply], HostedError>) -> Void)
  /// The reply stored for one idempotency key of `account`, if it was made at or after `since` (#42: a key this node
  /// does not know may have been answered by another node).
  func reply(
    of account: String, key: String, since: Double,
    completion: @escaping (Result<IdempotentReply?, HostedError>) -> Void)
  /// The history chunks of `account` holding cursors after `cursor`, at most `limit`, in cursor order.
  func history(
    _ account: String, after cursor: Int64, limit: Int,
    completion: @escaping (Result<[HostedStore.StoredHistory], HostedError>) -> Void)
  /// Every account's history chunks holding fleet positions after `seq`, in the fleet's order, at most `limit`.
  func fleetHistory(
    after seq: Int64, limit: Int, completion: @escaping (Result<[HostedStore.FleetHistory], HostedError>) -> Void)
  /// Every account's history chunks after (`account`, `cursor`), in account then cursor order, at most `limit`.
  func historyByAccount(
    after account: String, cursor: Int64, limit: Int,
    completion: @escaping (Result<[HostedStore.FleetHistory], HostedError>) -> Void)
  /// The fleet's newest history position (0: none).
  func fleetHistoryHead(completion: @escaping (Result<Int64, HostedError>) -> Void)
  /// The account's oldest kept history cursor and instant.
  func historyBounds(
    _ account: String,
    completion: @escaping (Result<(oldestCursor: Int64?, oldestAt: Double?), HostedError>) -> Void)
  /// Accounts in id order after `after`, at most `limit`, with their last operation cursor.
  func listAccounts(
    after: String?, limit: Int, completion: @escaping (Result<[(account: String, cursor: Int64)], HostedError>) -> Void)
  /// Accounts whose tombstone stands, with the instants it falls and it was laid, and whether it was reopened.
  func erasedAccounts(completion: @escaping (Result<[ErasedAccount], HostedError>) -> Void)
  /// Starts an erased account again for a token issued at `issuedAt`, after its erasure: its tombstone stays (older
  /// tokens are still refused) but no longer keeps the account from being stored. Answers false when the tombstone
  /// stands from an erasure at or after `issuedAt` (the token predates it: nothing changed).
  func reopenAccount(_ account: String, issuedAt: Double, completion: @escaping (Result<Bool, HostedError>) -> Void)
}

/// A standing tombstone: the account, the instants it falls and it was laid (seconds since the epoch), and whether a
/// token issued after the erasure has started the account again.
public typealias ErasedAccount = (account: String, until: Double, erasedAt: Double, reopened: Bool)
