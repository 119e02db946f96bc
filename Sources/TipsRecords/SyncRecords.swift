// What the sync layer and idempotent changes keep beside the engine's state, as plain values: the rows and writes
// of their tables, whichever store holds them (the one-user SQLite datastore, PostgreSQL in hosted mode).

/// A durable effect of the sync layer (`TipsSync`), committed in the same transaction as the engine's writes of the
/// turn (``Datastore/commit(_:sync:)``): a change and the operation that carries it to the other devices are stored
/// together or not at all.
public enum SyncWrite: Sendable, Hashable {
  /// A `sync_meta` entry (device id, account, cursor, clock…); nil deletes it.
  case meta(key: String, value: String?)
  /// One `sync_state` row: what `device` contributed under `kind` for `key` (JSON text); nil deletes it.
  case state(kind: String, device: String, key: String, value: String?)
  /// Deletes every `sync_state` row (a datastore reset of the account).
  case clearState
  /// Appends an operation to the outbox.
  case outboxAppend(seq: Int64, created: Double, op: String)
  /// Removes an operation from the outbox (PostgreSQL committed it, or a newer one superseded it).
  case outboxDelete(seq: Int64)
}

/// One `sync_state` row.
public struct SyncStateRow: Sendable, Hashable {
  public var kind: String
  public var device: String
  public var key: String
  public var value: String

  public init(kind: String, device: String, key: String, value: String) {
    self.kind = kind
    self.device = device
    self.key = key
    self.value = value
  }
}

/// One outbox entry: an operation not yet committed by PostgreSQL.
public struct OutboxRow: Sendable, Hashable {
  public var seq: Int64
  /// When it was queued (seconds since the epoch, wall clock).
  public var created: Double
  /// The operation's JSON text.
  public var op: String

  public init(seq: Int64, created: Double, op: String) {
    self.seq = seq
    self.created = created
    self.op = op
  }
}

/// Everything the sync layer stored, as ``Datastore/loadSync()`` reads it.
public struct SyncSnapshot: Sendable, Equatable {
  public var meta: [String: String] = [:]
  public var state: [SyncStateRow] = []
  /// Oldest first.
  public var outbox: [OutboxRow] = []

  public init() {}
}

/// The reply of a change made with an idempotency key: a repeat of the key within the window is answered with it and
/// changes nothing (`idempotencyKey`, issue #34). Committed in the change's own transaction — the datastore's on a
/// one-user daemon, PostgreSQL's in hosted mode.
public struct IdempotentReply: Sendable, Hashable {
  /// The client's key (1–128 bytes).
  public var key: String
  /// The change's result, as JSON (the reply without its envelope: a repeat gets it under its own id).
  public var result: [UInt8]
  /// When the change was made (seconds since the epoch, wall clock): the key is kept `--idempotency-hours` from it.
  public var at: Double

  public init(key: String, result: [UInt8], at: Double) {
    self.key = key
    self.result = result
    self.at = at
  }
}
