// The datastore's schema and its forward migrations.
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
// 5. sync across devices (`--sync`): `sync_meta` (device id, account, cursor, clock), `sync_state` (what each device
//    contributed: counters, invalidations, eligibility resets, parameter registers) and `sync_outbox` (operations
//    not yet committed by PostgreSQL). Not data tables: a datastore reset is itself synced and keeps them.

/// One forward migration: the SQL that takes a database from `version - 1` to `version`.
struct Migration {
  var version: Int
  var sql: String
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
  ]

  /// Tables every current datastore has, cleared by a reset (schema_version excepted).
  static let dataTables = [
    "donations", "events", "parameters", "tip_records", "meta", "donation_limits", "variant_assignments",
  ]
}

/// Keys of the `meta` table.
enum MetaKey {
  static let cooldownStartedAt = "cooldown_started_at"
  static let displayFrequency = "display_frequency"
  static let installID = "install_id"
}

/// The SQL of every statement the datastore runs more than once (each is prepared once and cached by the
/// address of its static text).
enum SQL {
  static let begin: StaticString = "BEGIN IMMEDIATE"
  static let beginRead: StaticString = "BEGIN DEFERRED"
  static let commit: StaticString = "COMMIT"
  static let rollback: StaticString = "ROLLBACK"

  static let selectEvents: StaticString = "SELECT id, name, dropped FROM events"
  static let addDropped: StaticString = "UPDATE events SET dropped = dropped + ?2 WHERE id = ?1"
  static let insertEvent: StaticString = "INSERT INTO events (name) VALUES (?1)"
  static let selectDonations: StaticString = "SELECT id, event, at, info FROM donations ORDER BY id"
  static let selectDonationIDs: StaticString = "SELECT id, event FROM donations ORDER BY id"
  static let insertDonation: StaticString = "INSERT INTO donations (event, at, info) VALUES (?1, ?2, ?3)"
  static let deleteDonation: StaticString = "DELETE FROM donations WHERE id = ?1"

  static let selectParameters: StaticString = "SELECT id, value FROM parameters"
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

  static let selectLimits: StaticString = "SELECT event, max_count FROM donation_limits"
  static let upsertLimit: StaticString = """
    INSERT INTO donation_limits (event, max_count) VALUES (?1, ?2)
    ON CONFLICT (event) DO UPDATE SET max_count = excluded.max_count
    """
}
