import TipsJSON
public import TipsLogging
public import TipsRecords
public import TipsSync
public import TipsTransport

/// Where a hosted node keeps every account's state: PostgreSQL, through three connections on the node's loop —
/// a writer (the loop turns' changes of every account in one transaction and one set-based statement, turns that end
/// while a commit is in flight joined in the next), a reader (account loads, catch-ups, history, admin reads;
/// pipelined, so loads never wait for each other) and a listener on the fleet's one
/// `NOTIFY` channel. Nothing here blocks; every call completes on the loop.
///
/// The tables are the sync schema's (`PGSchema`, version 3): an account's operations in `tipsd.ops` (a hosted node is
/// one more device of the account, named after the node), its snapshot in `tipsd.snapshots`, its lifecycle history
/// in `tipsd.history`, and an erased account's tombstone in `tipsd.erased`.
public final class HostedStore: HostedStorage {
  public struct Configuration: Sendable {
    public var server: SyncServer
    /// The node's name: its device id in every account it serves.
    public var node: String
    public var connectTimeout: Double = 10
    public var retryMax: Double = 2
    /// Seconds a link waits for an answer before it is declared lost (``PGLink``).
    public var answerTimeout: Double = 15
    /// Whether a turn of ``HostedStore/setBasedMinimum`` accounts or more goes in one `tipsd.commit_set` call.
    public var setBasedCommit = true
    /// Commit transactions the writer has in flight at once; turns committed meanwhile wait and go in one (#47).
    public var commitPipeline = 1

    public init(server: SyncServer, node: String) {
      self.server = server
      self.node = node
    }
  }

  /// What a fleet notification says.
  public enum Notice: Sendable, Hashable {
    /// `account`'s operations reach `cursor` (some device or node pushed).
    case operations(account: String, cursor: Int64)
    /// `account` was erased (`accounts/delete`).
    case deleted(account: String)
    /// A node reloaded its catalog; this is the new one's version.
    case catalog(version: String)
  }

  /// An account as PostgreSQL holds it: its snapshot, the operations after it, its history's last cursor.
  public struct StoredAccount: Sendable {
    public var snapshot: AccountSnapshot?
    public var operations: [OperationRow]
    public var historyCursor: Int64
    /// Whether PostgreSQL knows the account at all.
    public var exists: Bool
    /// Whether the account was erased and its tombstone stands, not reopened: it may not be used again yet.
    public var erased = false
    /// The standing tombstone, reopened or not (``ErasedAccount``).
    public var tombstone: (erasedAt: Double, until: Double, reopened: Bool)?
    /// Its replies to changes made with an idempotency key.
    public var replies: [IdempotentReply] = []
  }

  /// One account's part of a commit: its operations (as its outbox holds them) and its history chunks.
  public struct AccountChanges: Sendable {
    public var account: String
    public var operations: [PendingOperation]
    public var history: [HistoryChunk]
    /// Replies to changes made with an idempotency key, stored with them.
    public var replies: [IdempotentReply]
    /// Devices' operations pushed through this node (`sync/push`), stored as theirs after the node's own.
    public var devices: [DeviceOperations]

    public init(
      account: String, operations: [PendingOperation], history: [HistoryChunk],
      replies: [IdempotentReply] = [], devices: [DeviceOperations] = []
    ) {
      self.account = account
      self.operations = operations
      self.history = history
      self.replies = replies
      self.devices = devices
    }
  }

  /// History entries one commit recorded for one account, encoded (`HistoryBatch`'s chunk encoding), with cursors
  /// relative to the chunk: PostgreSQL gives the chunk its first cursor.
  public struct HistoryChunk: Sendable, Equatable {
    public var count: Int
    public var firstAt: Double
    public var lastAt: Double
    public var bytes: [UInt8]

    public init(count: Int, firstAt: Double, lastAt: Double, bytes: [UInt8]) {
      self.count = count
      self.firstAt = firstAt
      self.lastAt = lastAt
      self.bytes = bytes
    }
  }

  /// What PostgreSQL answered for one account of a commit.
  public struct Committed: Sendable, Equatable {
    /// The account's last operation cursor after the push (nil: it pushed no operations).
    public var lastCursor: Int64?
    /// Each history chunk's first cursor, in order.
    public var historyFirst: [Int64]
    /// The account's last operation cursor after the devices' pushes (nil: none pushed).
    public var devicesLastCursor: Int64? = nil
    /// Nothing of the account's part was stored, and why: its statement failed, or one of its idempotency keys was
    /// committed before (``firstReplies``). The other accounts of the commit were stored (#42).
    public var refused: String? = nil
    /// The account's idempotency keys another commit stored first (another node's), with the reply stored then
    /// (absent when it was pruned meanwhile).
    public var firstReplies: [String: [UInt8]] = [:]
    /// The device pushes (by their index in ``AccountChanges/devices``) not stored because another operation is
    /// stored under one of their seqs (#42): the first such seq. The other pushes were stored.
    public var deviceClashes: [Int: Int64] = [:]
    /// The account was erased (its tombstone stands): nothing of this commit was stored for it.
    public var erased: Bool { lastCursor == -1 || devicesLastCursor == -1 || historyFirst.contains(-1) }

    public init(
      lastCursor: Int64?, historyFirst: [Int64], devicesLastCursor: Int64? = nil, refused: String? = nil,
      firstReplies: [String: [UInt8]] = [:]
    ) {
      self.lastCursor = lastCursor
      self.historyFirst = historyFirst
      self.devicesLastCursor = devicesLastCursor
      self.refused = refused
      self.firstReplies = firstReplies
    }
  }

  /// A stored history chunk.
  public struct StoredHistory: Sendable, Equatable {
    public var cursor: Int64
    public var count: Int
    public var bytes: [UInt8]
  }

  public let configuration: Configuration
  let writer: PGLink
  let reader: PGLink
  /// The writer's backend on its current connection: its pid and when it started (a pid alone may be reused).
  var writerBackend: Backend?
  /// The backend a lost writer connection left behind, which may still commit what it was sent (a partition that
  /// heals after the node gave up on the connection forwards it): loads end it first (``fenceSQL``).
  var fence: Backend?
  /// Turns committed account by account because their one transaction failed (a statement PostgreSQL refused for
  /// one account), and turns committed in one set-based call (`tipsd.commit_set`), since start.
  public internal(set) var commitCounts = (eachAfterFailure: 0, setBased: 0)
  /// Commits that went in the transaction of an older one waiting with them (``commitPipeline``), since start.
  public internal(set) var mergedCommits = 0
  /// Commits waiting for one in flight to be answered (``commit(_:completion:)``), oldest first.
  var queuedCommits: [QueuedCommit] = []
  /// Commit transactions sent and not yet answered.
  var commitTransactionsInFlight = 0
  /// The node's loop: a commit answered sends the waiting ones at the end of its turn (``commit(_:completion:)``).
  let loop: any EventLoop
  /// The end-of-turn handler that sends waiting commits is installed (on the first answer, so after the server's own).
  var sendsAtEndOfTurn = false
  private let listener: PGLink
  /// A fleet notification arrived.
  public var onNotice: ((Notice) -> Void)?
  /// The writer became able (true) or unable (false) to commit.
  public var onWritableChange: ((Bool) -> Void)?
  /// A link (``Link``) became ready (true) or not (false).
  public var onLinkChange: ((Link, Bool) -> Void)?

  public init(
    loop: any EventLoop, configuration: Configuration,
    logger: Logger
  ) {
    self.configuration = configuration
    self.loop = loop
    let link = { (name: String, role: PGLink.Role) in
      PGLink(
        name: name, loop: loop, server: configuration.server, role: role,
        connectTimeout: configuration.connectTimeout, retryMax: configuration.retryMax,
        answerTimeout: configuration.answerTimeout, node: configuration.node, logger: logger)
    }
    writer = link(
      "writer",
      .pipelined(
        prepare: [
          (Statement.commit, PGSchema.commit), (Statement.commitSet, PGSchema.commitSet),
          (Statement.commitSetWithoutKeys, PGSchema.commitSetWithoutKeys),
          (Statement.history, Self.appendHistory), (Statement.publish, Self.publish),
        ],
        // Its commits do not notify (schema 11): ``publish(_:_:)`` does, once each is answered, off their lock.
        // Generic plans: PostgreSQL planned the set-based statement afresh for each commit (a custom plan for its
        // array parameters), a cost a commit that grew with the nodes sharing the load (#47's fleet figure).
        setup: [
          "SELECT set_config('tipsd.defer_notify', 'on', false)", "SET plan_cache_mode = force_generic_plan",
          Self.backendIdentity,
        ]))
    reader = link(
      "reader",
      .pipelined(
        prepare: [
          (Statement.load, Self.load), (Statement.pull, PGSchema.pullAsNode),
          (Statement.readHistory, Self.readHistory),
        ],
        // Before it reads anything: what a restarted primary replayed is on the standby (HostedStore+Durability).
        setup: [Self.durabilityBarrier]))
    listener = link("listener", .listener(channels: [PGSchema.fleetChannel]))
    writer.onSetup = { [unowned self] results in
      let row = results.last?.rows.first
      self.writerBackend = row.flatMap { row in
        guard row.count == 2, let pid = row[0], let start = row[1] else { return nil }
        return Backend(pid: pid, start: start)
      }
    }
    writer.onLosing = { [unowned self] in
      // Before the commits in flight fail (and their accounts are read again): their backend may still commit.
      if let backend = self.writerBackend { self.fence = backend }
      self.writerBackend = nil
    }
    writer.onStateChange = { [unowned self] state in
      self.onWritableChange?(state == .ready)
      self.onLinkChange?(.writer, state == .ready)
    }
    reader.onStateChange = { [unowned self] state in self.onLinkChange?(.reader, state == .ready) }
    listener.onStateChange = { [unowned self] state in self.onLinkChange?(.listener, state == .ready) }
    listener.onNotification = { [unowned self] channel, payload in
      guard channel == PGSchema.fleetChannel else { return }
      for notice in Self.notices(payload) { self.onNotice?(notice) }
    }
  }

  public func start() {
    writer.start()
    reader.start()
    listener.start()
  }

  public func stop() {
    writer.stop()
    reader.stop()
    listener.stop()
  }

  /// Whether changes can be committed now.
  public var isWritable: Bool { writer.isReady }
  /// Whether accounts can be loaded now.
  public var isReadable: Bool { reader.isReady }
  /// The server, without its password (`sync/status`, logs).
  public var serverDescription: String { configuration.server.redacted }
  /// Whether the listener is listening on the fleet's channel (else other nodes' changes are not heard).
  public var isListening: Bool { listener.isReady }
  /// Whether the schema in PostgreSQL is newer than this build (nothing can be served).
  public var isIncompatible: Bool { writer.state == .incompatible || reader.state == .incompatible }
  /// The writer's last error, for `/healthz` and logs.
  public var lastError: String? { writer.lastError ?? reader.lastError }
  /// Commits sent and not yet answered.
  public var commitsInFlight: Int { writer.inFlight }
  /// Seconds the oldest commit in flight has waited (nil: none waits): with a synchronous standby away, PostgreSQL
  /// holds every COMMIT until it is back, and this grows.
  public var oldestCommitAge: Double? { writer.oldestInFlightAge }

  // MARK: Writes

  /// Stores a snapshot unless a newer one is there already.
  public func writeSnapshot(
    account: String, _ snapshot: AccountSnapshot, completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        INSERT INTO tipsd.snapshots (account, cursor, state) VALUES ($1, $2::bigint, $3)
        ON CONFLICT (account) DO UPDATE SET cursor = excluded.cursor, state = excluded.state, updated_at = now()
        WHERE tipsd.snapshots.cursor < excluded.cursor
        """, [account, String(snapshot.cursor), snapshot.json.jsonString])
    ]) { completion($0.map { _ in () }) }
  }

  /// Tells every node that the catalog was reloaded (they reload theirs, reporting its version in `/healthz`).
  public func notifyCatalog(version: String) {
    writer.send([.query("SELECT pg_notify($1, $2)", [PGSchema.fleetChannel, "catalog " + version])]) { _ in }
  }

  // MARK: Reads

  /// Reads an account: its snapshot, the operations stored after it and its history's last cursor, as of one
  /// instant (one statement).
  public func load(_ account: String, completion: @escaping (Result<StoredAccount, HostedError>) -> Void) {
    let fenced = fence
    let fencing = fenceStatements(fenced)
    reader.send(
      fencing + [
        .prepared(Statement.load, [account]),
        .query("SELECT key, reply, at, \(Self.replyBarrier) FROM tipsd.idempotency WHERE account = $1", [account]),
      ] + (fencing.isEmpty ? [] : [.query(Self.durabilityBarrier)])
    ) { [weak self] result in
      if case .success = result { self?.fenced(fenced) }
      completion(
        result.map { Array($0.dropFirst(fencing.count).prefix(2)) }.flatMap {
          results -> Result<StoredAccount, HostedError> in
          var stored = StoredAccount(snapshot: nil, operations: [], historyCursor: 0, exists: false)
          stored.replies = (results.dropFirst().first?.rows ?? []).compactMap(Self.idempotentReply)
          for row in results.first?.rows ?? [] {
            guard row.count == 5, let kind = row[0], let cursor = row[1].flatMap({ Int64($0) }) else { continue }
            switch kind {
            case "0":
              guard let text = row[4] else { continue }
              do {
                stored.snapshot = try AccountSnapshot(json: try JSONParser.parse(text))
              } catch {
                return .failure(HostedError("account \(account): its stored snapshot is unreadable (\(error))"))
              }
            case "1":
              guard let device = row[2], let seq = row[3].flatMap({ Int64($0) }), let payload = row[4] else { continue }
              stored.operations.append(OperationRow(cursor: cursor, device: device, seq: seq, payload: payload))
            case "3":
              let reopened = cursor == 1
              stored.erased = !reopened
              stored.tombstone = row[4].flatMap { Double($0) }.map {
                ($0, row[2].flatMap { Double($0) } ?? 0, reopened)
              }
            default:
              stored.exists = true
              stored.historyCursor = cursor
            }
          }
          return .success(stored)
        })
    }
  }

  public func replies(
    of account: String, since: Double, completion: @escaping (Result<[IdempotentReply], HostedError>) -> Void
  ) {
    reader.send([
      .query(
        "SELECT key, reply, at, \(Self.replyBarrier) FROM tipsd.idempotency WHERE account = $1"
          + " AND at >= $2::double precision",
        [account, "\(since)"])
    ]) { result in
      completion(
        result.map { results in
          (results.first?.rows ?? []).compactMap(Self.idempotentReply)
        })
    }
  }

  public func reply(
    of account: String, key: String, since: Double,
    completion: @escaping (Result<IdempotentReply?, HostedError>) -> Void
  ) {
    reader.send([
      .query(
        "SELECT reply, at, \(Self.replyBarrier) FROM tipsd.idempotency WHERE account = $1 AND key = $2"
          + " AND at >= $3::double precision",
        [account, key, "\(since)"])
    ]) { result in
      completion(
        result.map { results in
          guard let row = results.first?.rows.first, row.count == 3, let reply = row[0],
            let at = row[1].flatMap({ Double($0) })
          else { return nil }
          return IdempotentReply(key: key, result: Array(reply.utf8), at: at)
        })
    }
  }

  /// Makes an account from an export: its snapshot (cursor 0: it has no operations yet) and its history chunks, in
  /// one transaction; refused (nothing written) when the account holds anything already. An erased account's
  /// tombstone is lifted: an admin's import is a deliberate restore.
  public func importAccount(
    _ account: String, snapshot: AccountSnapshot, history: [HistoryChunk],
    completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    var statements: [PGStatement] = [
      .query("SELECT tipsd.assert_empty($1)", [account]),
      .query("DELETE FROM tipsd.erased WHERE account = $1", [account]),
      .query(
        "INSERT INTO tipsd.accounts (account) VALUES ($1) ON CONFLICT (account) DO UPDATE SET erased = false", [account]
      ),
      .query(
        "INSERT INTO tipsd.snapshots (account, cursor, state) VALUES ($1, 0, $2)", [account, snapshot.json.jsonString]),
      AuditEntry.accountChange("account.import", account),
    ]
    for chunk in history {
      statements.append(
        .prepared(
          Statement.history,
          [account, String(chunk.count), "\(chunk.firstAt)", "\(chunk.lastAt)", Hex.bytea(chunk.bytes)]))
    }
    writer.send(statements) { result in
      completion(
        result.map { _ in () }.mapError { error in
          error.message.contains("already holds state") ? HostedError("account \(account) already holds state") : error
        })
    }
  }

  public func pruneReplies(
    before cutoff: Double, limit: Int, completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        WITH gone AS (
          DELETE FROM tipsd.idempotency WHERE ctid IN (
            SELECT ctid FROM tipsd.idempotency WHERE at < $1::double precision LIMIT $2::integer)
          RETURNING 1)
        SELECT count(*) FROM gone
        """, ["\(cutoff)", String(limit)])
    ]) { result in
      completion(result.map { results in results.first?.rows.first?.first?.flatMap { Int($0) } ?? 0 })
    }
  }

  /// Accounts in id order after `after`, at most `limit`, with their last operation cursor.
  public func listAccounts(
    after: String?, limit: Int, completion: @escaping (Result<[(account: String, cursor: Int64)], HostedError>) -> Void
  ) {
    reader.send([
      .query(
        """
        SELECT account, last_cursor FROM tipsd.accounts WHERE ($1::text IS NULL OR account > $1) AND NOT erased
        ORDER BY account LIMIT $2::integer
        """,
        [after, String(limit)])
    ]) { result in
      completion(
        result.map { results in
          (results.first?.rows ?? []).compactMap { row in
            guard row.count == 2, let account = row[0], let cursor = row[1].flatMap({ Int64($0) }) else { return nil }
            return (account, cursor)
          }
        })
    }
  }

  // MARK: Statements

  enum Statement {
    static let push = "tipsd_push"
    static let history = "tipsd_append_history"
    static let load = "tipsd_load"
    static let pull = "tipsd_pull"
    static let readHistory = "tipsd_read_history"
    static let commit = "tipsd_commit"
    static let commitSet = "tipsd_commit_set"
    static let commitSetWithoutKeys = "tipsd_commit_set_nokeys"
    static let publish = "tipsd_publish"
  }

  /// `$1` channels, `$2` payloads: a commit's notifications (``publish(_:_:)``), in a transaction of their own that
  /// does not wait for the flush to disk and standby (`synchronous_commit` off for it alone; when in the statement it
  /// is set does not matter, it is read at the commit). One prepared statement: parsed and planned once a connection.
  static let publish = """
    SELECT set_config('synchronous_commit', 'off', true),
      (SELECT count(pg_notify(n.c, n.p)) FROM unnest($1::text[], $2::text[]) AS n(c, p))
    """

  static let appendHistory =
    "SELECT tipsd.append_history($1, $2::integer, $3::double precision, $4::double precision, $5::bytea)"

  /// `$1` account: its snapshot (kind 0), the operations after the snapshot's cursor (kind 1), its account row
  /// (kind 2: the history cursor) and its tombstone if it stands (kind 3), in one statement — one consistent view.
  static let load = """
    SELECT 0 AS kind, s.cursor, NULL::text, NULL::bigint, s.state FROM tipsd.snapshots s WHERE s.account = $1
    UNION ALL
    SELECT 1, o.cursor, o.device, o.seq, o.op FROM tipsd.ops o
      WHERE o.account = $1 AND o.cursor > coalesce((SELECT cursor FROM tipsd.snapshots WHERE account = $1), 0)
    UNION ALL
    SELECT 2, a.history_cursor, NULL, NULL, NULL FROM tipsd.accounts a WHERE a.account = $1 AND NOT a.erased
    UNION ALL
    SELECT 3, (e.reopened_at IS NOT NULL)::int, extract(epoch FROM e.until)::text, NULL,
      extract(epoch FROM e.erased_at)::text FROM tipsd.erased e WHERE e.account = $1 AND e.until > now()
    ORDER BY 1, 2
    """

  /// `$1` account, `$2` after this cursor, `$3` at most this many chunks.
  static let readHistory = """
    SELECT cursor, count, entries FROM tipsd.history WHERE account = $1 AND cursor + count - 1 > $2::bigint
    ORDER BY cursor LIMIT $3::integer
    """

  /// A fleet notification's notices: one a line (a commit's accounts go in one notification, ``publish(_:_:)``).
  /// Read as bytes: every node parses every commit's notification of the fleet, its own included (#47).
  static func notices(_ payload: String) -> [Notice] {
    var payload = payload
    return payload.withUTF8 { bytes in
      var notices: [Notice] = []
      var start = 0
      while start < bytes.count {
        let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
        if let notice = notice(UnsafeBufferPointer(rebasing: bytes[start..<end])) { notices.append(notice) }
        start = end + 1
      }
      return notices
    }
  }

  /// Reads a fleet notification's line: `cursor account`, `deleted account` or `catalog version`.
  static func notice(_ payload: String) -> Notice? {
    var payload = payload
    return payload.withUTF8 { notice($0) }
  }

  private static func notice(_ line: UnsafeBufferPointer<UInt8>) -> Notice? {
    guard let space = line.firstIndex(of: UInt8(ascii: " ")), space + 1 < line.count else { return nil }
    let head = UnsafeBufferPointer(rebasing: line[..<space])
    let account = String(decoding: UnsafeBufferPointer(rebasing: line[(space + 1)...]), as: UTF8.self)
    if head.elementsEqual("deleted".utf8) { return .deleted(account: account) }
    if head.elementsEqual("catalog".utf8) { return .catalog(version: account) }
    guard let cursor = Int64(String(decoding: head, as: UTF8.self)) else { return nil }
    return .operations(account: account, cursor: cursor)
  }
}

/// `bytea` values as PostgreSQL's hex text format (`\x0a1b…`).
enum Hex {
  private static let digits = Array("0123456789abcdef".utf8)

  static func bytea(_ bytes: [UInt8]) -> String {
    var text: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
    text.reserveCapacity(2 + bytes.count * 2)
    for byte in bytes {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
  }

  static func decodeBytea(_ text: String) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
      return nil
    }
    func nibble(_ c: UInt8) -> UInt8? {
      switch c {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
      default: nil
      }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity((utf8.count - 2) / 2)
    var index = 2
    while index < utf8.count {
      guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
      index += 2
    }
    return bytes
  }
}
