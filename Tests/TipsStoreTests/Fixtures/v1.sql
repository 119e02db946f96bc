-- Schema version 1 of the tipsd datastore, with a little data, as an older tipsd wrote it.
-- Builds v1.sqlite, the fixture of the migration test:
--   rm -f v1.sqlite && sqlite3 v1.sqlite < v1.sql
-- Version 1 keys donations by event name, has no donation limits and no first/last displayed instants.
PRAGMA page_size = 1024;
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version (version) VALUES (1);
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

INSERT INTO donations (id, event, at, info) VALUES
  (1, 'search.opened', 1700000000.0, NULL),
  (2, 'trail.visited', 1700000010.5, '{"region":"north","difficulty":3}'),
  (3, 'search.opened', 1700000020.0, NULL),
  (5, 'trail.visited', 1700000030.25, '{"region":"south","difficulty":1}'),
  (8, 'search.opened', 1700000040.0, '{"query":"caf\u00e9 \"latte\""}'),
  (9, 'trail.visited', 1700000050.0, '{"region":"north","difficulty":2.5,"paved":false}');
INSERT INTO parameters (id, value) VALUES
  ('isLoggedIn', 'true'),
  ('plan', '"pro"'),
  ('visits', '42'),
  ('ratio', '0.75');
INSERT INTO tip_records (id, invalidation_reason, invalidated_at, display_count, displayed_duration) VALUES
  ('filter.tip', 'tipClosed', 1700000100.0, 2, 12.5),
  ('search.tip', NULL, NULL, 3, 7.0),
  ('trail.tip', 'displayCountExceeded', 1700000200.0, 5, 30.0);
INSERT INTO meta (key, value) VALUES
  ('cooldown_started_at', 1700000090.0),
  ('display_frequency', 'daily');
PRAGMA journal_mode = WAL;
