/// The `tipsd` schema in PostgreSQL, which tipsd creates and migrates itself, and the statements the pump runs.
///
/// - `tipsd.schema_version (version)`: one row.
/// - `tipsd.accounts (account PRIMARY KEY, last_cursor, created_at)`: one row per account; its row lock serializes
///   the account's pushes, so cursors are handed out in commit order (a reader never sees cursor n+1 before n).
/// - `tipsd.ops (account, cursor, device, seq, op, committed_at)`: every operation of every account, primary key
///   (account, cursor) — the catch-up index — and unique (account, device, seq), so a push repeated after a crash or
///   a lost reply inserts nothing twice. `op` is the operation's JSON (``SyncOperation/payload``).
/// - `tipsd.push(account, device, channel, seqs[], ops[])`: inserts a batch in one transaction, bumps the account's
///   cursor, `pg_notify`s the account's channel, returns the last cursor.
///
/// Version 2 (hosted mode) adds:
/// - `tipsd.accounts.history_cursor`: the account's last lifecycle-history cursor.
/// - `tipsd.snapshots (account PRIMARY KEY, cursor, state, updated_at)`: a hosted account's state as of `cursor`
///   (`TipsHosted.AccountSnapshot`'s JSON), so a node loads the snapshot and the operations after it.
/// - `tipsd.history (account, cursor, count, first_at, last_at, entries)`: the account's lifecycle history, one row per
///   account per commit (entries encoded as the datastore's `history` rows are), primary key (account, cursor).
/// - `tipsd.append_history(account, count, first_at, last_at, entries)`: stores a chunk under the account's next
///   cursors and returns the first cursor; the chunk's place in the fleet's one order (`tipsd.history.seq`, next
///   after `tipsd.fleet.history_seq`) is given later (version 5, below).
/// - `tipsd.assert_empty(account)`: raises unless the account holds nothing (an import's first statement).
/// - `tipsd.push` also notifies the fleet's one channel, `tipsd_fleet`, with `cursor account`: a hosted node listens
///   there once rather than once per account (PostgreSQL checks every notification against each listener's list of
///   channels one by one).
///
/// Version 3 adds erasure that is final:
/// - `tipsd.erased (account PRIMARY KEY, erased_at, until)`: a tombstone per erased account (hosted mode's
///   `accounts/delete`), kept until `until` (`--erasure-days`). `tipsd.push` and `tipsd.append_history` store
///   nothing for an account erased until later than now and return -1 (a device's or another node's push in flight
///   cannot bring it back); a hosted node refuses to sign such an account in or to load it.
///
/// Version 4 adds idempotent changes: `tipsd.idempotency (account, key, reply, at)` holds the reply of each change
/// made with an `idempotencyKey`, inserted in the change's own commit (primary key (account, key): a second node
/// committing the same key stores nothing of that account — version 9's `tipsd.commit` — and reads it back, the
/// key's first reply with it), pruned after `--idempotency-hours`.
///
/// Version 5 adds the retention of `tipsd.ops` (#34):
/// - `tipsd.devices (account, device, cursor, seen_at)`: where each syncing device has read the account up to, kept
///   by ``pullAsDevice`` on every pull.
/// - `tipsd.accounts.ops_floor`: the account's operations up to this cursor are gone (pruned); a reader behind it
///   reads the snapshot instead (a device merges it, a hosted node reads the account again).
/// - `tipsd.prune_ops(account, device_days, limit)`: raises the floor to the account's snapshot cursor, but not past
///   the cursor of a device seen within `device_days`, and deletes at most `limit` operations up to it; returns how
///   many it deleted (the compactor calls it after writing a snapshot, again while it deletes a full batch).
/// - `tipsd.pull(account, device, after, limit)`: a device's pull — its cursor registered, then the operations after
///   `after`, or, when `after` is behind the floor, one row holding the snapshot (seq -1, its JSON in `op`).
///
/// Version 6 takes the fleet-wide lock off the commit path: `tipsd.append_history` no longer takes `tipsd.fleet`'s
/// row (every node's commits queued on that one row). It stores a chunk with `seq` NULL and its place in arrival
/// order (`tipsd.history.arrival`, from the sequence `tipsd.history_arrival`: per account, arrival order is cursor
/// order, since the account's row lock is taken first). `tipsd.sequence_history(limit)` — run by the admin's reads,
/// never by a commit — locks `tipsd.fleet` (or, when another node holds it, places nothing this time), gives the
/// oldest unplaced chunks (in arrival order, skipping rows an erasure is deleting) the fleet's next positions and
/// returns the fleet's head. The positions stay dense and gap-free for a reader resuming from a cursor: placings take turns on the row and each commits all its positions
/// at once, after the previous one, so no reader ever sees a position before the ones below it; a chunk whose
/// commit is still in flight is simply placed by a later turn, after the positions already read.
///
/// Version 7 lets a user whose account was erased start again (#42): `tipsd.erased.reopened_at` is set when a token
/// issued after the erasure signs in; from then on `tipsd.is_erased` is false (pushes and history are stored, the
/// account loads empty), while a hosted node keeps refusing tokens issued before `erased_at` until `until`.
///
/// Version 8 bounds what one account's devices cost (#42): `tipsd.pull(account, device, after, limit, max_devices,
/// device_days)` refuses a new device past `max_devices` (raising `tipsd: device limit`) unless the least recently
/// seen one was silent longer than `device_days` (it is replaced); `tipsd.prune_ops(…, keep)` lets no device hold
/// more than `keep` operations behind the snapshot; and a pull behind the floor registers the device at the
/// snapshot's cursor (what it holds once merged), not at its `after`, so repeating `after: 0` pins nothing.
///
/// Version 9 isolates accounts in the group commit (#42): `tipsd.commit(account, …)` stores one account's part of a
/// node's commit — its idempotent replies first, then its operations (`tipsd.push`), history chunks
/// (`tipsd.append_history`) and devices' operations — and answers one row: the node's last cursor, each chunk's first
/// cursor, the devices' last cursor, whether the account is erased (then nothing is stored), and `conflicts`. A key
/// another transaction committed (another node's, a race) is no error: the account's replies inserted by this call
/// are taken back, nothing else of it is stored, and `conflicts` maps each such key to the reply stored first (null
/// when it was pruned meanwhile: then it is absent), so the other accounts of the commit are unaffected. Keys are inserted in key order,
/// so two nodes racing on several keys of one account never deadlock.
///
/// Version 10 binds a device's sequence numbers to what was first stored under them (#42): `tipsd.commit` compares
/// each device's push with the operations stored for its (device, seq) — after taking the account's row lock, so a
/// push another node commits meanwhile is seen — and stores nothing of a push with a different operation (text or,
/// failing that, JSON comparison) under a stored seq. `device_clashes` answers, per device push in order, the first such
/// seq (0: none; seqs start at 1): a second pusher gets an error on any node at any time, never a silent drop, while an
/// honest retry (the same operations) stays idempotent. The column is new, so the function is dropped and created.
///
/// Version 11 takes notifications off the commit (#47): a transaction that notifies holds PostgreSQL's one
/// notification lock from its `NOTIFY` until its commit is flushed — to the synchronous standby too — so every node's
/// commits queued behind each other (`fleet.postgres_lock_wait_share` 0.48 with two nodes). `tipsd.push` no longer
/// notifies in a session that set `tipsd.defer_notify` to `on`: a hosted node's writer does, and sends the commit's
/// notifications itself once PostgreSQL answered the commit, in one short transaction of its own with
/// `synchronous_commit` off (notifications are never durable anyway: a listener that was away catches up from its
/// cursors). Devices and one-user daemons pushing through `tipsd.push` still notify in their transaction. During a
/// rolling upgrade a node of version 10 keeps notifying inside its commits; both kinds of node hear each other.
///
/// Version 12 adds `tipsd.commit_set` (#47, `PGSchema+CommitSet.swift`): a hosted node's turn in one call of fixed
/// shape whatever its number of accounts — keys in one insert, the accounts' rows locked in account order and bumped
/// in one update, operations and history chunks in one insert each — where `tipsd.commit` (kept for turns with
/// devices' pushes and for the one-account-at-a-time fallback) ran a PL/pgSQL call per account, a loop per
/// operation and a call per history chunk. No table changes; nodes of version 11 and 12 share a database.
///
/// Version 13 keeps catalogs and the audit log, version 14 webhooks' durable outbox (#48: `PGSchema+Catalogs.swift`,
/// `PGSchema+Webhooks.swift`); in version 15 a key's first reply is on the standby before a commit answers it.
///
/// Version 16 makes an erasure final against commits racing it: the account's row is marked, not deleted
/// (`tipsd.accounts.erased`, ``erasureMark`` in `PGSchema+Erasure.swift`).
///
/// The tables are migrated step by step (each version's `IF … < N` block); the functions are code, not data: a
/// migration replaces them with the current definitions (``functions``), once, whatever version it started from.
///
/// Many accounts share one database; every query names its account.
public enum PGSchema {
  /// The schema version this build writes.
  package static let version = 16

  /// The channel every push notifies with `cursor account` (and `deleted account` when an account is erased).
  public static let fleetChannel = "tipsd_fleet"

  /// Creates or migrates the schema, under a transaction-scoped advisory lock (daemons starting together take turns),
  /// and returns the version row. Idempotent.
  public static let migrate = """
    BEGIN;
    SELECT pg_advisory_xact_lock(7305786447316791297);
    CREATE SCHEMA IF NOT EXISTS tipsd;
    CREATE TABLE IF NOT EXISTS tipsd.schema_version (version integer NOT NULL);
    INSERT INTO tipsd.schema_version SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM tipsd.schema_version);
    DO $migrate$
    DECLARE
      migrating boolean := (SELECT version FROM tipsd.schema_version) < \(version);
    BEGIN
      IF (SELECT version FROM tipsd.schema_version) < 1 THEN
        CREATE TABLE tipsd.accounts (
          account text PRIMARY KEY,
          last_cursor bigint NOT NULL DEFAULT 0,
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE tipsd.ops (
          account text NOT NULL,
          cursor bigint NOT NULL,
          device text NOT NULL,
          seq bigint NOT NULL,
          op text NOT NULL,
          committed_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (account, cursor),
          UNIQUE (account, device, seq)
        );
        UPDATE tipsd.schema_version SET version = 1;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 2 THEN
        ALTER TABLE tipsd.accounts ADD COLUMN history_cursor bigint NOT NULL DEFAULT 0;
        CREATE TABLE tipsd.snapshots (
          account text PRIMARY KEY,
          cursor bigint NOT NULL,
          state text NOT NULL,
          updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE tipsd.history (
          account text NOT NULL,
          cursor bigint NOT NULL,
          count integer NOT NULL,
          first_at double precision NOT NULL,
          last_at double precision NOT NULL,
          entries bytea NOT NULL,
          PRIMARY KEY (account, cursor)
        );
        CREATE INDEX history_last_at ON tipsd.history (last_at);
        -- The fleet's one order of history entries: every commit that appends history takes this row first (so
        -- commits append in turn and their positions are dense and in commit order), the admin's analytics stream
        -- reads by it.
        CREATE TABLE tipsd.fleet (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), history_seq bigint NOT NULL);
        INSERT INTO tipsd.fleet (history_seq) VALUES (0);
        ALTER TABLE tipsd.history ADD COLUMN seq bigint NOT NULL;
        CREATE UNIQUE INDEX history_seq ON tipsd.history (seq);
        UPDATE tipsd.schema_version SET version = 2;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 3 THEN
        CREATE TABLE tipsd.erased (
          account text PRIMARY KEY,
          erased_at timestamptz NOT NULL DEFAULT now(),
          until timestamptz NOT NULL
        );
        UPDATE tipsd.schema_version SET version = 3;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 4 THEN
        CREATE TABLE tipsd.idempotency (
          account text NOT NULL,
          key text NOT NULL,
          reply text NOT NULL,
          at double precision NOT NULL,
          PRIMARY KEY (account, key)
        );
        CREATE INDEX idempotency_at ON tipsd.idempotency (at);
        UPDATE tipsd.schema_version SET version = 4;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 5 THEN
        CREATE TABLE tipsd.devices (
          account text NOT NULL,
          device text NOT NULL,
          cursor bigint NOT NULL,
          seen_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (account, device)
        );
        ALTER TABLE tipsd.accounts ADD COLUMN ops_floor bigint NOT NULL DEFAULT 0;
        UPDATE tipsd.schema_version SET version = 5;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 6 THEN
        ALTER TABLE tipsd.history ALTER COLUMN seq DROP NOT NULL;
        ALTER TABLE tipsd.history ADD COLUMN arrival bigint;
        CREATE SEQUENCE tipsd.history_arrival;
        CREATE INDEX history_unplaced ON tipsd.history (arrival) WHERE seq IS NULL;
        UPDATE tipsd.schema_version SET version = 6;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 7 THEN
        ALTER TABLE tipsd.erased ADD COLUMN reopened_at timestamptz;
        UPDATE tipsd.schema_version SET version = 7;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 8 THEN
        CREATE INDEX devices_seen ON tipsd.devices (account, seen_at);
        UPDATE tipsd.schema_version SET version = 8;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 9 THEN
        UPDATE tipsd.schema_version SET version = 9;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 10 THEN
        UPDATE tipsd.schema_version SET version = 10;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 11 THEN
        UPDATE tipsd.schema_version SET version = 11;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 12 THEN
        UPDATE tipsd.schema_version SET version = 12;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 13 THEN
    \(catalogTables)
        UPDATE tipsd.schema_version SET version = 13;
      END IF;
      IF (SELECT version FROM tipsd.schema_version) < 14 THEN
    \(webhookTables)
        UPDATE tipsd.schema_version SET version = 14;
      END IF;
      UPDATE tipsd.schema_version SET version = 15 WHERE version < 15;
      IF (SELECT version FROM tipsd.schema_version) < 16 THEN
    \(erasureMark)
        UPDATE tipsd.schema_version SET version = 16;
      END IF;
      IF migrating THEN
    \(functions)
    \(webhookFunctions)
      END IF;
    END
    $migrate$;
    SELECT version FROM tipsd.schema_version;
    COMMIT;
    """

  /// The schema's functions at this version (see the type's notes), replaced by every migration.
  static let functions = """
    \(catalogFunctions)
        CREATE OR REPLACE FUNCTION tipsd.is_erased(p_account text) RETURNS boolean LANGUAGE sql STABLE AS $erased$
          SELECT EXISTS (
            SELECT 1 FROM tipsd.erased WHERE account = p_account AND until > now() AND reopened_at IS NULL)
        $erased$;
        CREATE OR REPLACE FUNCTION tipsd.push(p_account text, p_device text, p_channel text, p_seqs bigint[], p_ops text[])
          RETURNS bigint LANGUAGE plpgsql AS $push$
        DECLARE
          last bigint;
          gone boolean;
          added integer := 0;
          i integer;
        BEGIN
          IF tipsd.is_erased(p_account) THEN
            RETURN -1;
          END IF;
          INSERT INTO tipsd.accounts (account) VALUES (p_account) ON CONFLICT (account) DO NOTHING;
          -- The row's newest version, once locked: an erasure that committed meanwhile left its mark (schema 16).
          SELECT a.last_cursor, a.erased INTO last, gone FROM tipsd.accounts a WHERE a.account = p_account FOR UPDATE;
          IF gone THEN
            RETURN -1;
          END IF;
          FOR i IN 1 .. coalesce(array_length(p_seqs, 1), 0) LOOP
            INSERT INTO tipsd.ops (account, cursor, device, seq, op)
              VALUES (p_account, last + 1, p_device, p_seqs[i], p_ops[i])
              ON CONFLICT (account, device, seq) DO NOTHING;
            IF FOUND THEN
              last := last + 1;
              added := added + 1;
            END IF;
          END LOOP;
          IF added > 0 THEN
            UPDATE tipsd.accounts SET last_cursor = last WHERE account = p_account;
            IF current_setting('tipsd.defer_notify', true) IS DISTINCT FROM 'on' THEN
              PERFORM pg_notify(p_channel, last::text);
              PERFORM pg_notify('tipsd_fleet', last::text || ' ' || p_account);
            END IF;
          END IF;
          RETURN last;
        END
        $push$;
        CREATE OR REPLACE FUNCTION tipsd.append_history(
          p_account text, p_count integer, p_first_at double precision, p_last_at double precision, p_entries bytea)
          RETURNS bigint LANGUAGE plpgsql AS $history$
        DECLARE
          first bigint;
        BEGIN
          IF tipsd.is_erased(p_account) THEN
            RETURN -1;
          END IF;
          INSERT INTO tipsd.accounts (account) VALUES (p_account) ON CONFLICT (account) DO NOTHING;
          UPDATE tipsd.accounts SET history_cursor = history_cursor + p_count WHERE account = p_account AND NOT erased
            RETURNING history_cursor - p_count + 1 INTO first;
          IF first IS NULL THEN
            RETURN -1;
          END IF;
          INSERT INTO tipsd.history (account, cursor, count, first_at, last_at, entries, arrival)
            VALUES (p_account, first, p_count, p_first_at, p_last_at, p_entries, nextval('tipsd.history_arrival'));
          RETURN first;
        END
        $history$;
        CREATE OR REPLACE FUNCTION tipsd.prune_ops(
          p_account text, p_device_days double precision, p_limit integer, p_keep bigint)
          RETURNS integer LANGUAGE plpgsql AS $prune$
        DECLARE
          snapshot_cursor bigint;
          device_cursor bigint;
          new_floor bigint;
          deleted integer;
        BEGIN
          SELECT cursor INTO snapshot_cursor FROM tipsd.snapshots WHERE account = p_account;
          IF snapshot_cursor IS NULL THEN
            RETURN 0;
          END IF;
          SELECT min(cursor) INTO device_cursor FROM tipsd.devices
            WHERE account = p_account AND seen_at > now() - p_device_days * interval '1 day';
          -- No device holds back more than p_keep operations behind the snapshot: one further behind reads the
          -- snapshot (a device pulling from 0 again and again pins nothing).
          IF p_keep IS NOT NULL AND device_cursor IS NOT NULL THEN
            device_cursor := GREATEST(device_cursor, snapshot_cursor - p_keep);
          END IF;
          new_floor := LEAST(snapshot_cursor, coalesce(device_cursor, snapshot_cursor));
          -- The floor first, in the same transaction as the deletion: a reader sees both or neither.
          UPDATE tipsd.accounts SET ops_floor = new_floor WHERE account = p_account AND ops_floor < new_floor;
          DELETE FROM tipsd.ops WHERE account = p_account AND cursor IN (
            SELECT o.cursor FROM tipsd.ops o WHERE o.account = p_account AND o.cursor <= new_floor
            ORDER BY o.cursor LIMIT p_limit);
          GET DIAGNOSTICS deleted = ROW_COUNT;
          RETURN deleted;
        END
        $prune$;
        CREATE OR REPLACE FUNCTION tipsd.prune_ops(p_account text, p_device_days double precision, p_limit integer)
          RETURNS integer LANGUAGE sql AS $prune3$
          SELECT tipsd.prune_ops(p_account, p_device_days, p_limit, NULL)
        $prune3$;
        CREATE OR REPLACE FUNCTION tipsd.pull(p_account text, p_device text, p_after bigint, p_limit integer)
          RETURNS TABLE (cursor bigint, device text, seq bigint, op text) LANGUAGE plpgsql AS $pull$
        #variable_conflict use_column
        BEGIN
          IF tipsd.is_erased(p_account) THEN
            RETURN;
          END IF;
          IF EXISTS (SELECT 1 FROM tipsd.accounts a WHERE a.account = p_account AND a.ops_floor > p_after) THEN
            -- Behind what is kept: the device reads the snapshot, and is registered at its cursor (what it holds
            -- once merged), so a pull from far behind never holds the retention back.
            INSERT INTO tipsd.devices AS d (account, device, cursor)
              SELECT p_account, p_device, s.cursor FROM tipsd.snapshots s WHERE s.account = p_account
              ON CONFLICT (account, device) DO UPDATE SET cursor = excluded.cursor, seen_at = now();
            RETURN QUERY SELECT s.cursor, NULL::text, -1::bigint, s.state FROM tipsd.snapshots s
              WHERE s.account = p_account;
            RETURN;
          END IF;
          INSERT INTO tipsd.devices AS d (account, device, cursor) VALUES (p_account, p_device, p_after)
            ON CONFLICT (account, device) DO UPDATE SET cursor = excluded.cursor, seen_at = now();
          RETURN QUERY SELECT o.cursor, o.device, o.seq, o.op FROM tipsd.ops o
            WHERE o.account = p_account AND o.cursor > p_after ORDER BY o.cursor LIMIT p_limit;
        END
        $pull$;
        CREATE OR REPLACE FUNCTION tipsd.pull(
          p_account text, p_device text, p_after bigint, p_limit integer, p_max_devices integer,
          p_device_days double precision)
          RETURNS TABLE (cursor bigint, device text, seq bigint, op text) LANGUAGE plpgsql AS $pullcapped$
        #variable_conflict use_column
        DECLARE
          silent text;
        BEGIN
          IF NOT EXISTS (SELECT 1 FROM tipsd.devices d WHERE d.account = p_account AND d.device = p_device)
            AND (SELECT count(*) FROM tipsd.devices d WHERE d.account = p_account) >= p_max_devices
          THEN
            -- A new device past the account's budget replaces the least recently seen, once that one has been
            -- silent longer than p_device_days (its unread operations are no longer kept for it anyway).
            SELECT d.device INTO silent FROM tipsd.devices d
              WHERE d.account = p_account AND d.seen_at <= now() - p_device_days * interval '1 day'
              ORDER BY d.seen_at LIMIT 1;
            IF silent IS NULL THEN
              RAISE EXCEPTION 'tipsd: device limit: the account syncs % devices already', p_max_devices
                USING ERRCODE = 'P0001';
            END IF;
            DELETE FROM tipsd.devices d WHERE d.account = p_account AND d.device = silent;
          END IF;
          RETURN QUERY SELECT * FROM tipsd.pull(p_account, p_device, p_after, p_limit);
        END
        $pullcapped$;
        CREATE OR REPLACE FUNCTION tipsd.sequence_history(p_limit integer) RETURNS bigint
          LANGUAGE plpgsql AS $sequence$
        DECLARE
          head bigint;
          placed bigint;
        BEGIN
          -- Another node placing right now: read what is placed (a reader never waits here, nor do the loads
          -- pipelined behind it); the next read places the rest.
          SELECT history_seq INTO head FROM tipsd.fleet FOR UPDATE SKIP LOCKED;
          IF NOT FOUND THEN
            RETURN (SELECT history_seq FROM tipsd.fleet);
          END IF;
          WITH pending AS (
            SELECT account, cursor, count, arrival FROM tipsd.history WHERE seq IS NULL
              ORDER BY arrival LIMIT p_limit FOR UPDATE SKIP LOCKED),
          numbered AS (
            SELECT account, cursor, head + sum(count) OVER (ORDER BY arrival) - count + 1 AS seq FROM pending),
          done AS (
            UPDATE tipsd.history h SET seq = n.seq FROM numbered n WHERE h.account = n.account AND h.cursor = n.cursor
            RETURNING h.seq + h.count - 1 AS last)
          SELECT max(last) INTO placed FROM done;
          IF placed IS NOT NULL THEN
            UPDATE tipsd.fleet SET history_seq = placed;
            RETURN placed;
          END IF;
          RETURN head;
        END
        $sequence$;
    \(commitFunction)
    \(commitSetFunction)
        CREATE OR REPLACE FUNCTION tipsd.assert_empty(p_account text) RETURNS void LANGUAGE plpgsql AS $empty$
        BEGIN
          IF EXISTS (SELECT 1 FROM tipsd.ops WHERE account = p_account)
            OR EXISTS (SELECT 1 FROM tipsd.history WHERE account = p_account)
            OR EXISTS (SELECT 1 FROM tipsd.snapshots WHERE account = p_account)
          THEN
            RAISE EXCEPTION 'tipsd: the account already holds state' USING ERRCODE = 'unique_violation';
          END IF;
        END
        $empty$;
    """

  /// `$1` account, `$2` device, `$3` channel, `$4` seqs (`bigint[]` text), `$5` ops (`text[]` text).
  package static let push = "SELECT tipsd.push($1, $2, $3, $4::bigint[], $5::text[])"

  /// One account's part of a node's commit (see the type's notes on version 7): `$1` account, `$2` node, `$3`
  /// channel, `$4`/`$5` the node's seqs and operations, `$6`-`$9` history chunks (counts, first and last instants,
  /// entries), `$10`-`$12` idempotent replies (keys, replies, instants), `$13`-`$16` devices' operations (each
  /// device and how many of the flattened seqs and operations are its).
  package static let commit = """
    SELECT * FROM tipsd.commit($1, $2, $3, $4::bigint[], $5::text[], $6::integer[], $7::double precision[],
      $8::double precision[], $9::bytea[], $10::text[], $11::text[], $12::double precision[], $13::text[],
      $14::integer[], $15::bigint[], $16::text[])
    """

  /// `$1` at most this many chunks: places unplaced history chunks in the fleet's order and returns its head (see
  /// the type's notes on version 5).
  package static let sequenceHistory = "SELECT tipsd.sequence_history($1::integer)"

  /// `$1` account, `$2` after this cursor, `$3` at most this many: the catch-up, on the (account, cursor) key.
  package static let pull = """
    SELECT cursor, device, seq, op FROM tipsd.ops WHERE account = $1 AND cursor > $2 ORDER BY cursor LIMIT $3
    """

  /// `$1` account, `$2` device, `$3` after this cursor, `$4` at most this many: a device's pull (see the type's
  /// notes): the operations, or the snapshot (seq -1) when the device is behind what is kept.
  package static let pullAsDevice = "SELECT * FROM tipsd.pull($1, $2, $3::bigint, $4::integer)"

  /// `$1` account, `$2` after this cursor, `$3` at most this many: a hosted node's catch-up — the operations, led by
  /// a row of cursor -1 when `$2` is behind the account's pruned floor (the node then reads the account again).
  package static let pullAsNode = """
    SELECT -1::bigint AS cursor, NULL::text AS device, NULL::bigint AS seq, NULL::text AS op
      FROM tipsd.accounts WHERE account = $1 AND ops_floor > $2::bigint
    UNION ALL
    (SELECT cursor, device, seq, op FROM tipsd.ops WHERE account = $1 AND cursor > $2::bigint ORDER BY cursor LIMIT $3)
    ORDER BY 1
    """

  /// `$1` account, `$2` device days, `$3` at most this many, `$4` operations kept behind the snapshot at most: see
  /// `tipsd.prune_ops` in the type's notes.
  package static let pruneOps = "SELECT tipsd.prune_ops($1, $2::double precision, $3::integer, $4::bigint)"

  /// `$1` account, `$2` device, `$3` after this cursor, `$4` at most this many, `$5` devices the account may sync,
  /// `$6` device days: a device's pull through a hosted node — as ``pullAsDevice``, but a new device past `$5` is
  /// refused (`tipsd: device limit`) unless one was silent longer than `$6` days (it is replaced).
  package static let pullAsCappedDevice =
    "SELECT * FROM tipsd.pull($1, $2, $3::bigint, $4::integer, $5::integer, $6::double precision)"

  /// The start of the error PostgreSQL raises when a device's pull is refused by the account's budget of devices.
  package static let deviceLimitError = "tipsd: device limit"
}
