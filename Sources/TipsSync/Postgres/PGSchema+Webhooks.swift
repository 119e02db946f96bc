/// Version 14's tables and functions: webhooks' durable outbox (#48).
///
/// Version 14 adds webhooks' durable outbox (``webhookTables``): `tipsd.webhook_endpoints` (an app's URL, the event
/// types it takes, its `whsec_` secret, when and why it was disabled), `tipsd.webhook_events (id, app, type, payload,
/// created_at)` — the signed body, written by `tipsd.webhook_enqueue` in the change's own transaction together with a
/// `tipsd.webhook_deliveries (endpoint, event, attempts, next_at, last_result, delivered_at)` row per subscribed
/// endpoint — `tipsd.webhook_lease`, the one row naming the node that delivers until it expires (renewed while it
/// lives; another node takes it over once it lapsed), and `tipsd.webhook_once (app, type, key)`, which makes an
/// event such as `experiment.decided` enqueued once per key ever (`tipsd.webhook_enqueue_once`).
extension PGSchema {
  /// The tables version 14 creates (inside the migration's `IF … < 14` block).
  static let webhookTables = """
        CREATE TABLE tipsd.webhook_endpoints (
          id bigserial PRIMARY KEY,
          app text NOT NULL,
          url text NOT NULL,
          events text[] NOT NULL,
          secret text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          disabled_at timestamptz,
          disabled_reason text
        );
        CREATE INDEX webhook_endpoints_app ON tipsd.webhook_endpoints (app);
        CREATE TABLE tipsd.webhook_events (
          id bigserial PRIMARY KEY,
          app text NOT NULL,
          type text NOT NULL,
          payload text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX webhook_events_app ON tipsd.webhook_events (app, id);
        CREATE TABLE tipsd.webhook_deliveries (
          endpoint bigint NOT NULL REFERENCES tipsd.webhook_endpoints (id) ON DELETE CASCADE,
          event bigint NOT NULL REFERENCES tipsd.webhook_events (id) ON DELETE CASCADE,
          attempts integer NOT NULL DEFAULT 0,
          next_at timestamptz NOT NULL DEFAULT now(),
          last_result text,
          delivered_at timestamptz,
          PRIMARY KEY (endpoint, event)
        );
        CREATE INDEX webhook_deliveries_pending ON tipsd.webhook_deliveries (endpoint, event)
          WHERE delivered_at IS NULL;
        CREATE TABLE tipsd.webhook_lease (
          one boolean PRIMARY KEY DEFAULT true CHECK (one),
          holder text NOT NULL,
          expires_at timestamptz NOT NULL
        );
        CREATE TABLE tipsd.webhook_once (
          app text NOT NULL,
          type text NOT NULL,
          key text NOT NULL,
          at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (app, type, key)
        );
    """

  /// Version 12's functions (replaced by every migration, with the others).
  static let webhookFunctions = """
        CREATE OR REPLACE FUNCTION tipsd.webhook_enqueue(p_app text, p_type text, p_data text, p_endpoint bigint)
        RETURNS bigint LANGUAGE plpgsql AS $f$
        DECLARE
          event_id bigint;
        BEGIN
          INSERT INTO tipsd.webhook_events (app, type, payload) VALUES (p_app, p_type,
            json_build_object('type', p_type,
              'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
              'data', p_data::json)::text)
            RETURNING id INTO event_id;
          INSERT INTO tipsd.webhook_deliveries (endpoint, event)
            SELECT id, event_id FROM tipsd.webhook_endpoints
            WHERE app = p_app AND disabled_at IS NULL
              AND (id = p_endpoint OR (p_endpoint IS NULL AND p_type = ANY (events)));
          RETURN event_id;
        END
        $f$;
        CREATE OR REPLACE FUNCTION tipsd.webhook_enqueue_once(p_app text, p_type text, p_key text, p_data text)
        RETURNS bigint LANGUAGE plpgsql AS $f$
        BEGIN
          INSERT INTO tipsd.webhook_once (app, type, key) VALUES (p_app, p_type, p_key) ON CONFLICT DO NOTHING;
          IF NOT FOUND THEN
            RETURN NULL;
          END IF;
          RETURN tipsd.webhook_enqueue(p_app, p_type, p_data, NULL);
        END
        $f$;
    """

  /// Enqueues an event for every enabled endpoint of the app subscribed to its type, in the caller's transaction:
  /// `$1` app, `$2` type, `$3` data (JSON text); answers the event's id.
  package static let webhookEnqueue = "SELECT tipsd.webhook_enqueue($1, $2, $3, NULL)"

  /// As ``webhookEnqueue`` for one endpoint only (`webhooks/test`): `$4` the endpoint.
  package static let webhookEnqueueTo = "SELECT tipsd.webhook_enqueue($1, $2, $3, $4::bigint)"

  /// Enqueues an event once per (`$1` app, `$2` type, `$3` key) ever (`experiment.srm`, `experiment.decided`): `$4`
  /// data; answers the event's id, or NULL when the key was enqueued before.
  package static let webhookEnqueueOnce = "SELECT tipsd.webhook_enqueue_once($1, $2, $3, $4)"
}
