public import TipsRecords
public import TipsTransport

/// What a ``SyncPump`` runs its steps over: PostgreSQL (``PGSyncTransport``, `--sync postgresql://…`, trusted
/// machines) or a hosted node's JSON-RPC over WebSocket (``NodeSyncTransport``, `--sync wss://…`, users' devices).
/// One connection at a time, one step at a time; every completion comes later, on the loop, and none comes for a
/// connection that was closed or replaced. Loop thread only.
public protocol SyncTransport: AnyObject {
  /// Where it syncs, without secrets (log lines, `sync/status`).
  var redacted: String { get }
  /// What the pump's log lines call the other side ("PostgreSQL", "the hosted node").
  var peerName: String { get }
  /// Opens a new connection (closing any other); its events arrive through `events`.
  func open(_ events: SyncTransportEvents)
  /// Closes the connection; nothing more is reported for it.
  func close()
  /// After ``SyncTransportEvents/ready``: PostgreSQL creates or migrates its schema, a node signs the session in.
  /// Answers the schema version found and the newest this build understands.
  func handshake(_ done: @escaping (Result<(version: Int, supported: Int), SyncTransportError>) -> Void)
  /// Subscribes to the account's changes (PostgreSQL's `LISTEN`; a node subscribes with the first pull).
  func listen(_ done: @escaping (Result<Void, SyncTransportError>) -> Void)
  /// The operations after `cursor`, at most `limit`, or the account's snapshot when `cursor` is behind what is kept;
  /// the device's cursor is registered.
  func pull(after cursor: Int64, limit: Int, _ done: @escaping (Result<PulledOperations, SyncTransportError>) -> Void)
  /// Stores the device's operations (idempotent by seq); done once committed.
  func push(_ batch: [PendingOperation], _ done: @escaping (Result<Void, SyncTransportError>) -> Void)
}

/// A transport's connection events.
public struct SyncTransportEvents {
  /// The connection is open: the handshake may start.
  public var ready: () -> Void
  /// The connection could not be made or was lost (no secret in the message).
  public var failed: (String) -> Void
  /// The account changed on the other side (a `NOTIFY`, a `sync/changed`): pull.
  public var changed: () -> Void

  public init(ready: @escaping () -> Void, failed: @escaping (String) -> Void, changed: @escaping () -> Void) {
    self.ready = ready
    self.failed = failed
    self.changed = changed
  }
}

/// A step failed (no secret in the message): the pump gives the connection up and connects again.
public struct SyncTransportError: Error, Sendable, Equatable {
  public var message: String

  public init(_ message: String) { self.message = message }
}
