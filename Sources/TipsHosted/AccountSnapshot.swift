public import TipsEngine
public import TipsJSON
public import TipsRecords
public import TipsSync

/// A hosted account's state as of one `tipsd.ops` cursor, stored in `tipsd.snapshots` so that loading the account
/// reads the snapshot and the operations after it instead of replaying its whole log.
///
/// It holds the merge model's state (what every device and node contributed: ``SyncStateRow``s, the epoch and the
/// clock) and each event's kept donations — everything the account's engine is rebuilt from, since a hosted engine's
/// state is exactly the merged state. A snapshot is a function of the operations up to its cursor alone (it is taken
/// from an account loaded fresh from PostgreSQL, never from a node's live engine, which may hold operations of its own
/// past the cursor): applying it and then every later operation once gives the same state as replaying them all.
///
/// Its JSON (`tipsd.snapshots.state`, and the `state` of `accounts/export`):
/// `{"version": 1, "cursor": N, "meta": {"epoch": "…", "clock": "…"}, "rows": [[kind, device, key, value], …],
/// "donations": {"event": [[at, info-or-null], …]}}`.
public struct AccountSnapshot: Sendable, Equatable {
  /// The format this build writes.
  public static let version = 1

  /// The last operation it includes.
  public var cursor: Int64
  /// `sync_meta` entries: the epoch and the clock (``SyncModel/snapshotMeta``).
  public var meta: [String: String]
  /// The merge model's state (``SyncModel/stateRows()``).
  public var rows: [SyncStateRow]
  /// Each event's kept donations, oldest first.
  public var donations: [String: [Donation]]

  public init(cursor: Int64, meta: [String: String], rows: [SyncStateRow], donations: [String: [Donation]]) {
    self.cursor = cursor
    self.meta = meta
    self.rows = rows
    self.donations = donations
  }

  /// An empty account.
  public static let empty = AccountSnapshot(cursor: 0, meta: [:], rows: [], donations: [:])

  /// The snapshot of a loaded account: its model's state and its engine's donations.
  public init(model: SyncModel) {
    var meta = model.snapshotMeta
    let cursor = Int64(meta.removeValue(forKey: SyncModel.MetaKey.cursor) ?? "0") ?? 0
    var donations: [String: [Donation]] = [:]
    for event in model.engine.eventIDs {
      let kept = model.engine.donations(event)
      if !kept.isEmpty { donations[event] = kept }
    }
    self.init(cursor: cursor, meta: meta, rows: model.stateRows(), donations: donations)
  }

  // MARK: JSON

  public var json: JSONValue {
    var donationsObject = JSONObject()
    for (event, list) in donations.sorted(by: { $0.key < $1.key }) {
      donationsObject[event] = .array(list.map { .array([.double($0.at), $0.info.map { .object($0) } ?? .null]) })
    }
    var metaObject = JSONObject()
    for (key, value) in meta.sorted(by: { $0.key < $1.key }) { metaObject[key] = .string(value) }
    return .object([
      "version": .int(Int64(Self.version)),
      "cursor": .int(cursor),
      "meta": .object(metaObject),
      "rows": .array(rows.map { .array([.string($0.kind), .string($0.device), .string($0.key), .string($0.value)]) }),
      "donations": .object(donationsObject),
    ])
  }

  /// Reads a snapshot's JSON; throws a message naming what is wrong.
  public init(json: JSONValue) throws(HostedError) {
    guard case .object(let object) = json else { throw HostedError("a snapshot must be a JSON object") }
    guard let version = object["version"]?.intValue, version == Int64(Self.version) else {
      throw HostedError("unknown snapshot version (this tipsd reads version \(Self.version))")
    }
    guard let cursor = object["cursor"]?.intValue, cursor >= 0 else {
      throw HostedError("snapshot.cursor must be a non-negative integer")
    }
    var meta: [String: String] = [:]
    for (key, value) in object["meta"]?.objectValue?.members ?? [] {
      guard let text = value.stringValue else { throw HostedError("snapshot.meta.\(key) must be a string") }
      meta[key] = text
    }
    var rows: [SyncStateRow] = []
    for (index, item) in (object["rows"]?.arrayValue ?? []).enumerated() {
      guard let fields = item.arrayValue, fields.count == 4, let kind = fields[0].stringValue,
        let device = fields[1].stringValue, let key = fields[2].stringValue, let value = fields[3].stringValue
      else { throw HostedError("snapshot.rows[\(index)] must be [kind, device, key, value], all strings") }
      rows.append(SyncStateRow(kind: kind, device: device, key: key, value: value))
    }
    var donations: [String: [Donation]] = [:]
    for (event, value) in object["donations"]?.objectValue?.members ?? [] {
      guard let list = value.arrayValue else { throw HostedError("snapshot.donations.\(event) must be an array") }
      donations[event] = try list.enumerated().map { (index, item) throws(HostedError) in
        guard let pair = item.arrayValue, pair.count == 2, let at = pair[0].doubleValue else {
          throw HostedError("snapshot.donations.\(event)[\(index)] must be [at, info]")
        }
        switch pair[1] {
        case .null: return Donation(at: at)
        case .object(let info): return Donation(at: at, info: info)
        default: throw HostedError("snapshot.donations.\(event)[\(index)] info must be an object or null")
        }
      }
    }
    self.init(cursor: cursor, meta: meta, rows: rows, donations: donations)
  }
}

/// A failure of hosted mode's own (a malformed snapshot, an account that cannot load), as a sentence.
public struct HostedError: Error, Sendable, CustomStringConvertible, Equatable {
  public var message: String
  /// PostgreSQL refused a statement and rolled the batch back: nothing of it was stored, for certain (else, a failed
  /// commit's outcome may be unknown).
  public var rolledBack = false
  public init(_ message: String, rolledBack: Bool = false) {
    self.message = message
    self.rolledBack = rolledBack
  }
  public var description: String { message }

  /// A pull from a cursor behind the account's pruned operations (`tipsd.accounts.ops_floor`): what it missed is
  /// only in the snapshot — the account is read again.
  public static let behindRetention = HostedError("the operations after this cursor were pruned; read the snapshot")
  /// A device's pull refused: the account syncs `--account-max-devices` devices already, none silent long enough to
  /// be replaced.
  public static let deviceLimit = HostedError("the account syncs as many devices as it may")
}
