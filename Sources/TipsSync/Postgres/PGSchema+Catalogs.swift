/// Version 13 keeps catalogs and the audit log (#48): `tipsd.catalog_versions (app, version, catalog, digest, note,
/// actor, created_at)` holds every published catalog of an app (versions numbered per app from 1, the catalog's JSON
/// text and its digest), `tipsd.catalog_current (app, version)` the version each app serves, and
/// `tipsd.catalog_schedules (id, app, version, at, actor, applied_at)` publishes to come. `tipsd.catalog_publish`,
/// `tipsd.catalog_set_current` (a rollback) and `tipsd.catalog_apply_due` (a due schedule, claimed `FOR UPDATE SKIP
/// LOCKED` and marked applied in the same transaction: once, by whichever node runs it first) take the app's
/// advisory lock, append their audit entry and notify the fleet (`catalog published APP`) in the change's own
/// transaction. `tipsd.audit (id, at, actor, action, app, before, after, detail)` is append-only: a trigger refuses
/// every UPDATE, DELETE and TRUNCATE; `tipsd.audit_append` adds an entry in the caller's transaction.
///
/// The tables are created once (``catalogTables``); the functions are replaced by every migration
/// (``catalogFunctions``).
extension PGSchema {
  /// The tables version 13 adds.
  static let catalogTables = """
        CREATE TABLE tipsd.catalog_versions (
          app text NOT NULL,
          version integer NOT NULL,
          catalog text NOT NULL,
          digest text NOT NULL,
          note text NOT NULL DEFAULT '',
          actor text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (app, version)
        );
        CREATE TABLE tipsd.catalog_current (
          app text PRIMARY KEY,
          version integer NOT NULL,
          updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE tipsd.catalog_schedules (
          id bigserial PRIMARY KEY,
          app text NOT NULL,
          version integer NOT NULL,
          at timestamptz NOT NULL,
          actor text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          applied_at timestamptz
        );
        CREATE INDEX catalog_schedules_due ON tipsd.catalog_schedules (at) WHERE applied_at IS NULL;
        CREATE TABLE tipsd.audit (
          id bigserial PRIMARY KEY,
          at timestamptz NOT NULL DEFAULT now(),
          actor text NOT NULL,
          action text NOT NULL,
          app text,
          before text,
          after text,
          detail text NOT NULL DEFAULT '{}'
        );
        CREATE INDEX audit_app ON tipsd.audit (app, id);
        CREATE FUNCTION tipsd.audit_refuse() RETURNS trigger LANGUAGE plpgsql AS $refuse$
        BEGIN
          RAISE EXCEPTION 'tipsd: the audit log is append-only (% refused)', TG_OP;
        END
        $refuse$;
        CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON tipsd.audit
          FOR EACH ROW EXECUTE FUNCTION tipsd.audit_refuse();
        CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON tipsd.audit
          FOR EACH STATEMENT EXECUTE FUNCTION tipsd.audit_refuse();
    """

  /// The functions of catalogs and the audit log.
  static let catalogFunctions = """
        CREATE OR REPLACE FUNCTION tipsd.audit_append(p_actor text, p_action text, p_app text, p_before text,
          p_after text, p_detail text) RETURNS bigint LANGUAGE sql AS $audit$
          INSERT INTO tipsd.audit (actor, action, app, before, after, detail)
          VALUES (p_actor, p_action, p_app, p_before, p_after, coalesce(p_detail, '{}')) RETURNING id
        $audit$;
        CREATE OR REPLACE FUNCTION tipsd.catalog_set_current(p_app text, p_version integer, p_actor text,
          p_action text, p_detail text) RETURNS integer LANGUAGE plpgsql AS $current$
        DECLARE
          before_digest text;
          after_digest text;
        BEGIN
          PERFORM pg_advisory_xact_lock(hashtext('tipsd.catalog ' || p_app));
          SELECT digest INTO after_digest FROM tipsd.catalog_versions WHERE app = p_app AND version = p_version;
          IF after_digest IS NULL THEN
            RAISE EXCEPTION 'tipsd: app % has no catalog version %', p_app, p_version;
          END IF;
          SELECT v.digest INTO before_digest FROM tipsd.catalog_current c
            JOIN tipsd.catalog_versions v ON v.app = c.app AND v.version = c.version WHERE c.app = p_app;
          INSERT INTO tipsd.catalog_current (app, version) VALUES (p_app, p_version)
            ON CONFLICT (app) DO UPDATE SET version = excluded.version, updated_at = now();
          PERFORM tipsd.audit_append(p_actor, p_action, p_app, before_digest, after_digest, p_detail);
          PERFORM pg_notify('\(fleetChannel)', 'catalog published ' || p_app);
          RETURN p_version;
        END
        $current$;
        CREATE OR REPLACE FUNCTION tipsd.catalog_publish(p_app text, p_catalog text, p_digest text, p_note text,
          p_actor text) RETURNS integer LANGUAGE plpgsql AS $publish$
        DECLARE
          next integer;
        BEGIN
          PERFORM pg_advisory_xact_lock(hashtext('tipsd.catalog ' || p_app));
          SELECT coalesce(max(version), 0) + 1 INTO next FROM tipsd.catalog_versions WHERE app = p_app;
          INSERT INTO tipsd.catalog_versions (app, version, catalog, digest, note, actor)
            VALUES (p_app, next, p_catalog, p_digest, coalesce(p_note, ''), p_actor);
          RETURN tipsd.catalog_set_current(p_app, next, p_actor, 'catalog.publish',
            json_build_object('version', next, 'note', coalesce(p_note, ''))::text);
        END
        $publish$;
        CREATE OR REPLACE FUNCTION tipsd.catalog_schedule(p_app text, p_version integer, p_at double precision,
          p_actor text) RETURNS bigint LANGUAGE plpgsql AS $schedule$
        DECLARE
          id bigint;
          digest text;
        BEGIN
          SELECT v.digest INTO digest FROM tipsd.catalog_versions v WHERE v.app = p_app AND v.version = p_version;
          IF digest IS NULL THEN
            RAISE EXCEPTION 'tipsd: app % has no catalog version %', p_app, p_version;
          END IF;
          INSERT INTO tipsd.catalog_schedules (app, version, at, actor)
            VALUES (p_app, p_version, to_timestamp(p_at), p_actor) RETURNING catalog_schedules.id INTO id;
          PERFORM tipsd.audit_append(p_actor, 'catalog.schedule', p_app, NULL, digest,
            json_build_object('version', p_version, 'at', p_at, 'schedule', id)::text);
          RETURN id;
        END
        $schedule$;
        CREATE OR REPLACE FUNCTION tipsd.catalog_apply_due() RETURNS integer LANGUAGE plpgsql AS $due$
        DECLARE
          s record;
          applied integer := 0;
        BEGIN
          FOR s IN SELECT * FROM tipsd.catalog_schedules WHERE applied_at IS NULL AND at <= now()
            ORDER BY at, id FOR UPDATE SKIP LOCKED
          LOOP
            PERFORM tipsd.catalog_set_current(s.app, s.version, s.actor, 'catalog.scheduledPublish',
              json_build_object('version', s.version, 'schedule', s.id)::text);
            -- The app's webhooks hear it as a publish, in the same transaction (#48's outbox).
            PERFORM tipsd.webhook_enqueue(s.app, 'catalog.published',
              json_build_object('app', s.app, 'version', s.version, 'schedule', s.id)::text, NULL);
            UPDATE tipsd.catalog_schedules SET applied_at = now() WHERE id = s.id;
            applied := applied + 1;
          END LOOP;
          RETURN applied;
        END
        $due$;
    """
}
