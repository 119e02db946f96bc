// The datastore's schema and its forward migrations.
import TipsEngine
import TipsJSON

//
// A database is always created by running every migration from version 0, so a fresh datastore and a migrated
// one go through the same SQL. `schema_version` holds one row with the version; each migration runs in the
// same transaction as the bump of that row, so a crash mid-migration leaves the previous version intact.
//
// Version history:
// 1. donations keyed by event name, parameters, tip records (status, display count and duration), meta
//    (cooldown start, display frequency).
// 2. tip records gain first/last displayed instants; per-event donation limits.
// 3. event names move to an `events` table and donations reference it by integer id (smaller rows, and a load
//    that builds no string per donation); the (event, id) index is dropped: the store keeps each event's donation
//    row ids in memory, so bounding deletes by primary key, and an insert touches only the table's last page
//    instead of one index page per event (which made group commit write several times more WAL per mutation).
// 4. lifetime counts: `events.dropped` counts the donations trimmed away (kept + dropped = donations ever; bumped
//    once per event per commit, not per donation); the install id (meta) and per-tip variant assignments.
//    Datastores of earlier versions forgot what they trimmed, so their lifetime counts start at what they keep.
// 5. donations packed by commit: `donation_chunks` holds the donations of one event written in one commit in one
//    row (see DonationChunk) with the number of its newest donation (`end_seq`) and of the event's oldest donation
//    still kept (`first_visible`), so a turn costs one row insert per event and nothing else; chunks wholly past
//    the bound are deleted in batches. `events.dropped` is now what the lifetime count adds to that numbering (set
//    by merges from other devices; the dropped count of schema 4). The migration packs each event's rows.
// 6. the lifecycle history (issue #13): `history` holds the entries (impressions, eligibility changes,
//    invalidations, actions, variant assignments, donations of goal and app-closed events) in chunks, one row per
//    commit that recorded any (at most 256 entries a row), keyed by the chunk's first cursor, its entries encoded by
//    `HistoryCodec`: one insert per commit instead of one per entry. Cursors are assigned by the server and never
//    reused (a datastore reset leaves the history alone). No index: chunks are appended at the table's end.
//    `history_tips` holds the eligibility last recorded per tip, so a restart that finds a tip as it left it records
//    nothing.
// 7. sync across devices (`--sync`): `sync_meta` (device id, account, cursor, clock), `sync_state` (what each device
//    contributed: counters, invalidations, eligibility resets, parameter registers) and `sync_outbox` (operations
//    not yet committed by PostgreSQL). Not data tables: a datastore reset is itself synced and keeps them.
// 8. history chunks may hold runs of donation continuations: donations of the event the previous entry donated, with
//    the next cursors, stored as a tag, a count and per donation the varint difference of the instants (about one
//    byte instead of 12; see `HistoryCodec`). No table changes; older builds refuse the file rather than misread its
//    history.
// 9. `history_head` holds the newest cursor assigned once pruning has deleted the chunk that held it (retention
//    applies to every entry, the newest included: `--history-days 0` keeps none), so cursors continue after it.
// 10. beyond TipKit (issue #25): `donation_limits` holds an optional count (`max_count` may be null: `maxDonations`
//    became optional) and an optional maximum age in seconds (`max_age`, iOS 26's `DonationLimit(maximumAge:)`);
//    `exposures` holds the holdout records whose counterfactual exposure is open (record key, since); the suppression
//    in force is three `meta` keys. History chunks may hold `exposure` entries (kind 8), which a build of schema 9
//    would read as malformed.
// 11. idempotent changes (issue #34): `idempotency` holds the reply of each change made with an `idempotencyKey`
//    (key, the reply's result as JSON, when), written in the change's own transaction, so a retry of the key is
//    answered with it and changes nothing; pruned after `--idempotency-hours`. A datastore reset keeps it (a
//    retried reset must not reset again).

/// One forward migration: the SQL that takes a database from `version - 1` to `version`.
struct Migration {
  var version: Int
  var sql: String
  /// Work SQL cannot express, run after `sql` in the same transaction.
  var transform: (@Sendable (SQLiteConnection) throws(SQLiteError) -> Void)? = nil
}

enum Schema {
  /// The version this code reads and writes.
  static var currentVersion: Int { migrations.last!.version }

  /// Every migration, in order, starting from an empty database (version 0).
  static let migrations: [Migration] = [
    Migration(
      version: 1,
      sql: """
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version (version) VALUES (0);
        CREATE TABLE donations (
          id INTEGER PRIMARY KEY,
          event TEXT NOT NULL,
          at REAL NOT NULL,
          info TEXT
        );
        CREATE INDEX donations_by_event ON donations (event, id);
        CREATE TABLE parameters (id TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE tip_records (
          id TEXT PRIMARY KEY NOT NULL,
          invalidation_reason TEXT,
          invalidated_at REAL,
          display_count INTEGER NOT NULL DEFAULT 0,
          displayed_duration REAL NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
        """
    ),
    Migration(
      version: 2,
      sql: """
        ALTER TABLE tip_records ADD COLUMN first_displayed_at REAL;
        ALTER TABLE tip_records ADD COLUMN last_displayed_at REAL;
        CREATE TABLE donation_limits (event TEXT PRIMARY KEY NOT NULL, max_count INTEGER NOT NULL) WITHOUT ROWID;
        """
    ),
    Migration(
      version: 3,
      sql: """
        CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        INSERT INTO events (name) SELECT event FROM donations GROUP BY event ORDER BY min(id);
        CREATE TABLE donations_v3 (
          id INTEGER PRIMARY KEY,
          event INTEGER NOT NULL,
          at REAL NOT NULL,
          info TEXT
        );
        INSERT INTO donations_v3 (id, event, at, info)
          SELECT d.id, e.id, d.at, d.info FROM donations AS d JOIN events AS e ON e.name = d.event ORDER BY d.id;
        DROP TABLE donations;
        ALTER TABLE donations_v3 RENAME TO donations;
        """
    ),
    Migration(
      version: 4,
      sql: """
        ALTER TABLE events ADD COLUMN dropped INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE variant_assignments (tip TEXT PRIMARY KEY NOT NULL, variant TEXT NOT NULL) WITHOUT ROWID;
        """
    ),
    Migration(
      version: 5,
      sql: """
        CREATE TABLE donation_chunks (
          id INTEGER PRIMARY KEY,
          event INTEGER NOT NULL,
          count INTEGER NOT NULL,
          end_seq INTEGER NOT NULL,
          first_visible INTEGER NOT NULL,
          data BLOB NOT NULL
        );
        """,
      transform: { connection throws(SQLiteError) in try Schema.packDonations(connection) }
    ),
    Migration(
      version: 6,
      sql: """
        CREATE TABLE history (
          id INTEGER PRIMARY KEY,
          last INTEGER NOT NULL,
          first_at REAL NOT NULL,
          last_at REAL NOT NULL,
          kinds INTEGER NOT NULL,
          entries BLOB NOT NULL
        );
        CREATE TABLE history_tips (
          tip TEXT PRIMARY KEY NOT NULL,
          status TEXT NOT NULL,
          reason TEXT,
          should_display INTEGER NOT NULL,
          variant TEXT
        ) WITHOUT ROWID;
        """
    ),
    Migration(
      version: 7,
      sql: """
        CREATE TABLE sync_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE sync_state (
          kind TEXT NOT NULL,
          device TEXT NOT NULL,
          key TEXT NOT NULL,
          value TEXT NOT NULL,
          PRIMARY KEY (kind, device, key)
        ) WITHOUT ROWID;
        CREATE TABLE sync_outbox (seq INTEGER PRIMARY KEY, created REAL NOT NULL, op TEXT NOT NULL);
        """
    ),
    // No table changes: history chunks may now hold runs of donation continuations (HistoryCodec), which a build of
    // schema 7 would read as malformed; the version makes it refuse the file instead.
    Migration(version: 8, sql: ""),
    Migration(
      version: 9,
      sql: """
        CREATE TABLE history_head (id INTEGER PRIMARY KEY CHECK (id = 1), cursor INTEGER NOT NULL);
        """
    ),
    Migration(
      version: 10,
      sql: """
        CREATE TABLE donation_limits_v10 (event TEXT PRIMARY KEY NOT NULL, max_count INTEGER, max_age REAL) WITHOUT ROWID;
        INSERT INTO donation_limits_v10 (event, max_count) SELECT event, max_count FROM donation_limits;
        DROP TABLE donation_limits;
        ALTER TABLE donation_limits_v10 RENAME TO donation_limits;
        CREATE TABLE exposures (key TEXT PRIMARY KEY NOT NULL, since REAL NOT NULL) WITHOUT ROWID;
        """
    ),
    Migration(
      version: 11,
      sql: """
        CREATE TABLE idempotency (key TEXT PRIMARY KEY NOT NULL, reply BLOB NOT NULL, at REAL NOT NULL) WITHOUT ROWID;
        """
    ),
  ]

  /// Migration 5: each event's donation rows, in order, become one chunk; then the old table goes.
  static func packDonations(_ connection: SQLiteConnection) throws(SQLiteError) {
    var order: [Int64] = []
    var chunks: [Int64: PendingChunk] = [:]
    let rows = try connection.prepareUncached("SELECT event, at, info FROM donations ORDER BY id")
    while try rows.step() {
      let event = rows.int64(0)
      if chunks[event] == nil {
        order.append(event)
        chunks[event] = PendingChunk()
      }
      var info: JSONObject?
      if let bytes = rows.textBytes(2) {
        guard case .object(let object)? = try? JSONParser.parse(bytes) else {
          throw SQLiteError(corrupt: "a donation of event id \(event) has associated values that are not a JSON object")
        }
        info = object
      }
      DonationChunk.append(Donation(at: rows.double(1), info: info), to: &chunks[event]!.bytes)
      chunks[event]!.count += 1
    }
    let insert = try connection.prepareUncached(
      "INSERT INTO donation_chunks (event, count, end_seq, first_visible, data) VALUES (?1, ?2, ?3, ?4, ?5)")
    for event in order {
      // Numbered from 1; `events.dropped` keeps what the lifetime count adds (see EventHistory.offset).
      let chunk = chunks[event]!
      insert.bind(1, event)
      insert.bind(2, chunk.count)
      insert.bind(3, chunk.count)
      insert.bind(4, 1)
      insert.bindBlob(5, chunk.bytes)
      try insert.run()
    }
    try connection.execute("DROP TABLE donations")
  }

  /// Tables every current datastore has, cleared by a reset (schema_version excepted).
  static let dataTables = [
    "donation_chunks", "events", "parameters", "tip_records", "meta", "donation_limits", "variant_assignments",
    "exposures",
  ]
}

/// Keys of the `meta` table.
enum MetaKey {
  static let cooldownStartedAt = "cooldown_started_at"
  static let displayFrequency = "display_frequency"
  static let installID = "install_id"
  static let suppressedSince = "suppressed_since"
  static let suppressedUntil = "suppressed_until"
  static let suppressionReason = "suppression_reason"
}

/// The SQL of every statement the datastore runs more than once (each is prepared once and cached by the
/// address of its static text).
enum SQL {
  static let begin: StaticString = "BEGIN IMMEDIATE"
  static let beginRead: StaticString = "BEGIN DEFERRED"
  static let commit: StaticString = "COMMIT"
  static let rollback: StaticString = "ROLLBACK"

  static let selectEvents: StaticString = "SELECT id, name, dropped FROM events"
  static let insertEvent: StaticString = "INSERT INTO events (name) VALUES (?1)"
  static let selectChunks: StaticString =
    "SELECT id, event, count, end_seq, first_visible, data FROM donation_chunks ORDER BY id"
  static let selectChunkCounts: StaticString =
    "SELECT id, event, count, end_seq, first_visible FROM donation_chunks ORDER BY id"
  static let insertChunk: StaticString =
    "INSERT INTO donation_chunks (event, count, end_seq, first_visible, data) VALUES (?1, ?2, ?3, ?4, ?5)"
  static let setFirstVisible: StaticString = "UPDATE donation_chunks SET first_visible = ?2 WHERE id = ?1"
  static let deleteChunk: StaticString = "DELETE FROM donation_chunks WHERE id = ?1"

  static let selectParameters: StaticString = "SELECT id, value FROM parameters"
  static let insertIdempotentReply: StaticString = "INSERT INTO idempotency (key, reply, at) VALUES (?1, ?2, ?3)"
  static let upsertParameter: StaticString = """
    INSERT INTO parameters (id, value) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET value = excluded.value
    """
  static let deleteParameter: StaticString = "DELETE FROM parameters WHERE id = ?1"

  static let selectTipRecords: StaticString = """
    SELECT id, invalidation_reason, invalidated_at, display_count, displayed_duration, first_displayed_at,
      last_displayed_at FROM tip_records
    """
  static let upsertTipRecord: StaticString = """
    INSERT INTO tip_records (id, invalidation_reason, invalidated_at, display_count, displayed_duration,
      first_displayed_at, last_displayed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
    ON CONFLICT (id) DO UPDATE SET invalidation_reason = excluded.invalidation_reason,
      invalidated_at = excluded.invalidated_at, display_count = excluded.display_count,
      displayed_duration = excluded.displayed_duration, first_displayed_at = excluded.first_displayed_at,
      last_displayed_at = excluded.last_displayed_at
    """
  static let deleteTipRecord: StaticString = "DELETE FROM tip_records WHERE id = ?1"

  static let selectMeta: StaticString = "SELECT key, value FROM meta"
  static let upsertMeta: StaticString =
    "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
  static let deleteMeta: StaticString = "DELETE FROM meta WHERE key = ?1"

  static let selectVariants: StaticString = "SELECT tip, variant FROM variant_assignments"
  static let upsertVariant: StaticString = """
    INSERT INTO variant_assignments (tip, variant) VALUES (?1, ?2)
    ON CONFLICT (tip) DO UPDATE SET variant = excluded.variant
    """
  static let deleteVariant: StaticString = "DELETE FROM variant_assignments WHERE tip = ?1"

  static let insertHistoryChunk: StaticString =
    "INSERT INTO history (id, last, first_at, last_at, kinds, entries) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
  static let selectChunkStart: StaticString = "SELECT max(id) FROM history WHERE id <= ?1"
  static let selectChunksFrom: StaticString = "SELECT id, entries FROM history WHERE id >= ?1 ORDER BY id"
  static let selectChunksWithKinds: StaticString =
    "SELECT id, entries FROM history WHERE kinds & ?1 <> 0 ORDER BY id"
  static let selectFirstChunkWithKinds: StaticString =
    "SELECT id, entries FROM history WHERE kinds & ?1 <> 0 ORDER BY id LIMIT 1"
  /// The newest cursor assigned: the newest chunk's last, or what pruning kept of it (0 when none ever was).
  static let selectNewestCursor: StaticString = """
    SELECT max(coalesce((SELECT last FROM history ORDER BY id DESC LIMIT 1), 0),
      coalesce((SELECT cursor FROM history_head), 0))
    """
  static let upsertHistoryHead: StaticString =
    "INSERT INTO history_head (id, cursor) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET cursor = excluded.cursor"
  static let selectOldestChunkAt: StaticString = "SELECT first_at FROM history ORDER BY id LIMIT 1"
  /// The chunks holding an entry older than ?1 (a scan of the table: pruning runs hourly).
  static let selectChunksOlderThan: StaticString =
    "SELECT id, last, last_at, entries FROM history WHERE first_at < ?1 ORDER BY id"
  static let deleteHistoryChunk: StaticString = "DELETE FROM history WHERE id = ?1"
  static let deleteHistoryTips: StaticString = "DELETE FROM history_tips"
  static let selectHistoryTips: StaticString = "SELECT tip, status, reason, should_display, variant FROM history_tips"
  static let upsertHistoryTip: StaticString = """
    INSERT INTO history_tips (tip, status, reason, should_display, variant) VALUES (?1, ?2, ?3, ?4, ?5)
    ON CONFLICT (tip) DO UPDATE SET status = excluded.status, reason = excluded.reason,
      should_display = excluded.should_display, variant = excluded.variant
    """
  static let pageCount: StaticString = "PRAGMA page_count"
  static let pageSize: StaticString = "PRAGMA page_size"
  static let selectSyncMeta: StaticString = "SELECT key, value FROM sync_meta"
  static let upsertSyncMeta: StaticString =
    "INSERT INTO sync_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
  static let deleteSyncMeta: StaticString = "DELETE FROM sync_meta WHERE key = ?1"
  static let selectSyncState: StaticString = "SELECT kind, device, key, value FROM sync_state"
  static let upsertSyncState: StaticString = """
    INSERT INTO sync_state (kind, device, key, value) VALUES (?1, ?2, ?3, ?4)
    ON CONFLICT (kind, device, key) DO UPDATE SET value = excluded.value
    """
  static let deleteSyncState: StaticString = "DELETE FROM sync_state WHERE kind = ?1 AND device = ?2 AND key = ?3"
  static let clearSyncState: StaticString = "DELETE FROM sync_state"
  static let selectOutbox: StaticString = "SELECT seq, created, op FROM sync_outbox ORDER BY seq"
  static let insertOutbox: StaticString = "INSERT INTO sync_outbox (seq, created, op) VALUES (?1, ?2, ?3)"
  static let deleteOutbox: StaticString = "DELETE FROM sync_outbox WHERE seq = ?1"
  static let setDropped: StaticString = "UPDATE events SET dropped = ?2 WHERE id = ?1"

  static let selectLimits: StaticString = "SELECT event, max_count, max_age FROM donation_limits"
  static let upsertLimit: StaticString = """
    INSERT INTO donation_limits (event, max_count) VALUES (?1, ?2)
    ON CONFLICT (event) DO UPDATE SET max_count = excluded.max_count
    """
  static let upsertMaxAge: StaticString = """
    INSERT INTO donation_limits (event, max_age) VALUES (?1, ?2)
    ON CONFLICT (event) DO UPDATE SET max_age = excluded.max_age
    """
  static let selectExposures: StaticString = "SELECT key, since FROM exposures"
  static let upsertExposure: StaticString = """
    INSERT INTO exposures (key, since) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET since = excluded.since
    """
  static let deleteExposure: StaticString = "DELETE FROM exposures WHERE key = ?1"
}
