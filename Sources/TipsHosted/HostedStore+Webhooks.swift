import TipsJSON
package import TipsSync

// Webhooks' durable outbox (#48) in PostgreSQL (``PGSchema``'s version 14): endpoints, events written in the change's
// own transaction, per-endpoint deliveries, and the lease that lets one node of the fleet deliver at a time. Every
// statement goes through the writer: the lease and the deliveries are read where they are written (the primary).
extension HostedStore {
  /// A webhook endpoint as stored.
  public struct WebhookEndpoint: Sendable, Equatable {
    public var id: Int64
    public var app: String
    public var url: String
    public var events: [String]
    public var createdAt: Double
    public var disabledAt: Double?
    public var disabledReason: String?
    /// Deliveries not made yet, and the last attempt's result.
    public var pending: Int
    public var lastResult: String?
  }

  /// One delivery due now: the oldest undelivered event of an enabled endpoint (each endpoint's events go out in
  /// the order they were created; a later one waits for the earlier).
  public struct DueDelivery: Sendable, Equatable {
    public var endpoint: Int64
    public var event: Int64
    public var attempts: Int
    public var url: String
    public var secret: String
    public var payload: String
    /// When the event was created (seconds since the epoch).
    public var createdAt: Double
  }

  /// The statement that enqueues a webhook event inside a transaction the caller sends (a catalog's publish or
  /// rollback, an erasure): every enabled endpoint of `app` subscribed to `type` gets a delivery of it, committed —
  /// or rolled back — with the change. `data` is the payload's `data`, as JSON text.
  package static func webhookEvent(app: String, type: String, data: String) -> PGStatement {
    .query(PGSchema.webhookEnqueue, [app, type, data])
  }

  /// As ``webhookEvent(app:type:data:)``, but only the first time for (`app`, `type`, `key`) ever.
  package static func webhookEventOnce(app: String, type: String, key: String, data: String) -> PGStatement {
    .query(PGSchema.webhookEnqueueOnce, [app, type, key, data])
  }

  /// `account.deleted`'s data: the account's app and the `sub` its app knows it by.
  static func accountDeletedData(_ account: String) -> String {
    JSONValue.object([
      "app": .string(AccountKey.app(of: account)), "account": .string(AccountKey.subject(of: account)),
    ]).jsonString
  }

  /// Sends a transaction of one webhook event alone (an event whose change is not in PostgreSQL).
  public func enqueueWebhookEvent(
    once key: String?, app: String, type: String, data: String,
    completion: @escaping (Result<Int64?, HostedError>) -> Void
  ) {
    let statement =
      key.map { Self.webhookEventOnce(app: app, type: type, key: $0, data: data) }
      ?? Self.webhookEvent(app: app, type: type, data: data)
    writer.send([statement]) { result in
      completion(result.map { $0.first?.rows.first?.first.flatMap { $0 }.flatMap { Int64($0) } })
    }
  }

  // MARK: Endpoints

  ///
  /// Every change to the endpoints is audited in its own statement (`actor`: who asked): one statement, so the entry
  /// and the change are stored together or not at all, and a refused change (no such endpoint) records nothing.
  public func createWebhook(
    app: String, url: String, events: [String], secret: String, actor: String,
    completion: @escaping (Result<WebhookEndpoint, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        WITH e AS (
          INSERT INTO tipsd.webhook_endpoints (app, url, events, secret) VALUES ($1, $2, $3::text[], $4)
          RETURNING id, created_at
        )
        SELECT e.id, extract(epoch FROM e.created_at)::double precision,
          tipsd.audit_append($5, 'webhook.create', $1, NULL, NULL,
            json_build_object('id', e.id, 'url', $2::text, 'events', $3::text[])::text)
        FROM e
        """, [app, url, Self.textArray(events), secret, actor])
    ]) { result in
      completion(
        result.flatMap { results in
          guard let row = results.first?.rows.first, row.count >= 2, let id = row[0].flatMap({ Int64($0) }) else {
            return .failure(HostedError("PostgreSQL answered no endpoint id"))
          }
          return .success(
            WebhookEndpoint(
              id: id, app: app, url: url, events: events, createdAt: row[1].flatMap { Double($0) } ?? 0,
              disabledAt: nil, disabledReason: nil, pending: 0, lastResult: nil))
        })
    }
  }

  /// The endpoints of `app` (every app's when nil), by id.
  public func listWebhooks(app: String?, completion: @escaping (Result<[WebhookEndpoint], HostedError>) -> Void) {
    writer.send([
      .query(
        """
        SELECT e.id, e.app, e.url, array_to_json(e.events)::text, extract(epoch FROM e.created_at)::double precision,
          extract(epoch FROM e.disabled_at)::double precision, e.disabled_reason,
          (SELECT count(*) FROM tipsd.webhook_deliveries d WHERE d.endpoint = e.id AND d.delivered_at IS NULL),
          (SELECT d.last_result FROM tipsd.webhook_deliveries d WHERE d.endpoint = e.id AND d.last_result IS NOT NULL
            ORDER BY d.event DESC LIMIT 1)
        FROM tipsd.webhook_endpoints e WHERE $1::text IS NULL OR e.app = $1 ORDER BY e.id
        """, [app])
    ]) { result in
      completion(
        result.map { results in
          (results.first?.rows ?? []).compactMap { row in
            guard row.count == 9, let id = row[0].flatMap({ Int64($0) }), let app = row[1], let url = row[2] else {
              return nil
            }
            return WebhookEndpoint(
              id: id, app: app, url: url, events: Self.parseTextArray(row[3] ?? "[]"),
              createdAt: row[4].flatMap { Double($0) } ?? 0, disabledAt: row[5].flatMap { Double($0) },
              disabledReason: row[6], pending: row[7].flatMap { Int($0) } ?? 0, lastResult: row[8])
          }
        })
    }
  }

  /// Deletes an endpoint of `app` and its deliveries; whether there was one.
  public func deleteWebhook(
    app: String, id: Int64, actor: String, completion: @escaping (Result<Bool, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        WITH d AS (DELETE FROM tipsd.webhook_endpoints WHERE app = $1 AND id = $2::bigint RETURNING id, url)
        SELECT d.id, tipsd.audit_append($3, 'webhook.delete', $1, NULL, NULL,
          json_build_object('id', d.id, 'url', d.url)::text)
        FROM d
        """, [app, "\(id)", actor])
    ]) { result in
      completion(result.map { ($0.first?.rows.count ?? 0) > 0 })
    }
  }

  /// Enqueues a `webhook.test` event for one endpoint of `app`; its id, or nil when there is no such endpoint.
  public func testWebhook(
    app: String, id: Int64, data: String, actor: String, completion: @escaping (Result<Int64?, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        WITH t AS (
          SELECT tipsd.webhook_enqueue($1, $2, $3, $4::bigint) AS event
          WHERE EXISTS (SELECT 1 FROM tipsd.webhook_endpoints WHERE app = $1 AND id = $4::bigint)
        )
        SELECT t.event, tipsd.audit_append($5, 'webhook.test', $1, NULL, NULL,
          json_build_object('id', $4::bigint, 'event', t.event)::text)
        FROM t
        """, [app, "webhook.test", data, "\(id)", actor])
    ]) { result in
      completion(result.map { $0.first?.rows.first?.first.flatMap { $0 }.flatMap { Int64($0) } })
    }
  }

  /// Delivers again every event of `app` after `after` to each of the app's enabled endpoints subscribed to it (an
  /// event already delivered goes out again under the same webhook id); how many deliveries were queued.
  public func replayWebhooks(
    app: String, after: Int64, actor: String, completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        WITH queued AS (
          INSERT INTO tipsd.webhook_deliveries (endpoint, event)
          SELECT e.id, ev.id FROM tipsd.webhook_endpoints e JOIN tipsd.webhook_events ev ON ev.app = e.app
          WHERE e.app = $1 AND e.disabled_at IS NULL AND ev.id > $2::bigint
            AND (ev.type = ANY (e.events) OR ev.type = 'webhook.test')
            AND (ev.type <> 'webhook.test' OR EXISTS (
              SELECT 1 FROM tipsd.webhook_deliveries d WHERE d.endpoint = e.id AND d.event = ev.id))
          ON CONFLICT (endpoint, event) DO UPDATE
            SET delivered_at = NULL, attempts = 0, next_at = now(), last_result = NULL
          RETURNING 1
        ), n AS (SELECT count(*) AS queued FROM queued)
        SELECT n.queued, tipsd.audit_append($3, 'webhook.replay', $1, NULL, NULL,
          json_build_object('after', $2::bigint, 'queued', n.queued)::text)
        FROM n
        """, [app, "\(after)", actor])
    ]) { result in
      completion(result.map { $0.first?.rows.first?.first.flatMap { $0 }.flatMap { Int($0) } ?? 0 })
    }
  }

  // MARK: Delivery

  /// Takes or renews the delivery lease for `seconds`: true when `holder` holds it now (it was free, lapsed, or
  /// already `holder`'s).
  public func takeWebhookLease(
    holder: String, seconds: Double, completion: @escaping (Result<Bool, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        INSERT INTO tipsd.webhook_lease AS l (one, holder, expires_at)
        VALUES (true, $1, now() + $2::double precision * interval '1 second')
        ON CONFLICT (one) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
          WHERE l.holder = excluded.holder OR l.expires_at < now()
        RETURNING holder
        """, [holder, "\(seconds)"])
    ]) { result in
      completion(result.map { $0.first?.rows.first?.first.flatMap { $0 } == holder })
    }
  }

  /// Gives the lease up (a node stopping), so another node takes over at once.
  public func releaseWebhookLease(holder: String) {
    writer.send([.query("DELETE FROM tipsd.webhook_lease WHERE holder = $1", [holder])]) { _ in }
  }

  /// Each enabled endpoint's oldest undelivered event whose attempt is due, skipping `busy` endpoints (at most
  /// `limit`), and the age in seconds of the oldest undelivered event (0: none waits).
  public func dueWebhookDeliveries(
    skipping busy: [Int64], limit: Int,
    completion: @escaping (Result<(due: [DueDelivery], lag: Double), HostedError>) -> Void
  ) {
    writer.send([
      .query(
        """
        SELECT h.endpoint, h.event, h.attempts, e.url, e.secret, ev.payload,
          extract(epoch FROM ev.created_at)::double precision
        FROM (
          SELECT DISTINCT ON (d.endpoint) d.endpoint, d.event, d.attempts, d.next_at
          FROM tipsd.webhook_deliveries d
          WHERE d.delivered_at IS NULL AND NOT (d.endpoint = ANY ($1::bigint[]))
          ORDER BY d.endpoint, d.event
        ) h
        JOIN tipsd.webhook_endpoints e ON e.id = h.endpoint
        JOIN tipsd.webhook_events ev ON ev.id = h.event
        WHERE e.disabled_at IS NULL AND h.next_at <= now()
        ORDER BY h.event LIMIT $2::integer
        """, ["{" + busy.map { String($0) }.joined(separator: ",") + "}", "\(limit)"]),
      .query(
        """
        SELECT coalesce(extract(epoch FROM now() - min(ev.created_at)), 0)::double precision
        FROM tipsd.webhook_deliveries d JOIN tipsd.webhook_events ev ON ev.id = d.event
        JOIN tipsd.webhook_endpoints e ON e.id = d.endpoint
        WHERE d.delivered_at IS NULL AND e.disabled_at IS NULL
        """),
    ]) { result in
      completion(
        result.map { results in
          let due = (results.first?.rows ?? []).compactMap { row -> DueDelivery? in
            guard row.count == 7, let endpoint = row[0].flatMap({ Int64($0) }),
              let event = row[1].flatMap({ Int64($0) }), let url = row[3], let secret = row[4], let payload = row[5]
            else { return nil }
            return DueDelivery(
              endpoint: endpoint, event: event, attempts: row[2].flatMap { Int($0) } ?? 0, url: url, secret: secret,
              payload: payload, createdAt: row[6].flatMap { Double($0) } ?? 0)
          }
          let lag = results.last?.rows.first?.first.flatMap { $0 }.flatMap { Double($0) } ?? 0
          return (due, lag)
        })
    }
  }

  /// Records an attempt: delivered, or to be tried again in `retryIn` seconds — or, with `disable`, the endpoint is
  /// disabled for that reason (its deliveries stay, for a replay once it is enabled again).
  public func recordWebhookAttempt(
    endpoint: Int64, event: Int64, delivered: Bool, result text: String, retryIn: Double, disable: String?,
    completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    var statements: [PGStatement] = [
      .query(
        """
        UPDATE tipsd.webhook_deliveries SET attempts = attempts + 1, last_result = $3,
          delivered_at = CASE WHEN $4::boolean THEN now() END,
          next_at = now() + $5::double precision * interval '1 second'
        WHERE endpoint = $1::bigint AND event = $2::bigint
        """, ["\(endpoint)", "\(event)", text, delivered ? "true" : "false", "\(retryIn)"])
    ]
    if let disable {
      // Audited with the disabling, by tipsd itself (no one asked).
      statements.append(
        .query(
          """
          WITH d AS (
            UPDATE tipsd.webhook_endpoints SET disabled_at = now(), disabled_reason = $2
            WHERE id = $1::bigint AND disabled_at IS NULL
            RETURNING id, app, url
          )
          SELECT tipsd.audit_append('tipsd', 'webhook.disable', d.app, NULL, NULL,
            json_build_object('id', d.id, 'url', d.url, 'reason', $2::text)::text)
          FROM d
          """, ["\(endpoint)", disable]))
    }
    writer.send(statements) { completion($0.map { _ in () }) }
  }

  // MARK: Arrays

  /// A PostgreSQL text array literal (every element quoted).
  static func textArray(_ items: [String]) -> String {
    let quoted = items.map { item in
      var text = "\""
      for character in item {
        if character == "\\" || character == "\"" { text.append("\\") }
        text.append(character)
      }
      return text + "\""
    }
    return "{" + quoted.joined(separator: ",") + "}"
  }

  /// A JSON array of strings (from `array_to_json`); the event type names are plain ASCII.
  static func parseTextArray(_ json: String) -> [String] {
    var items: [String] = []
    var current = ""
    var inString = false
    var escaped = false
    for character in json {
      if inString {
        if escaped {
          current.append(character)
          escaped = false
        } else if character == "\\" {
          escaped = true
        } else if character == "\"" {
          items.append(current)
          current = ""
          inString = false
        } else {
          current.append(character)
        }
      } else if character == "\"" {
        inString = true
      }
    }
    return items
  }
}
