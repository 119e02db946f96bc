/// One stored operation of an account (a row of `tipsd.ops`), as every reader sees it — a hosted node loading or
/// pulling an account, a device's sync pump, a device's pull through a node: its cursor (PostgreSQL's order of the
/// account's operations), the device or node that made it, that device's sequence number, and the payload (the
/// operation's JSON text, decoded by `SyncOperation(device:seq:payload:)` in TipsSync).
///
/// The protocol's `sync/pull` answer carries the same four facts with the payload parsed (`SyncPullRequest.Operation`:
/// a wire type, converted at the edge).
public struct OperationRow: Sendable, Hashable {
  public var cursor: Int64
  public var device: String
  public var seq: Int64
  public var payload: String

  public init(cursor: Int64, device: String, seq: Int64, payload: String) {
    self.cursor = cursor
    self.device = device
    self.seq = seq
    self.payload = payload
  }
}

/// What a pull of an account's operations read: the operations after the cursor, or — for a reader behind what is
/// kept (the operations before the account's snapshot were pruned) — the account's snapshot (its JSON) and cursor.
public enum PulledOperations: Sendable {
  case rows([OperationRow])
  case snapshot(state: String, cursor: Int64)
}

/// An operation on its way to storage: its device's (or node's) own sequence number and its payload — what a sync
/// outbox pushes and a hosted turn commits (stored, it becomes an ``OperationRow`` with a cursor).
public struct PendingOperation: Sendable, Hashable {
  public var seq: Int64
  public var payload: String

  public init(seq: Int64, payload: String) {
    self.seq = seq
    self.payload = payload
  }
}
