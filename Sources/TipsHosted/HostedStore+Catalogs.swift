public import TipsSync

/// One entry of the audit log (`tipsd.audit`, schema 13): who changed what, when, in which app, the digests before
/// and after, and a JSON detail.
public struct AuditEntry: Sendable, Equatable {
  public var id: Int64
  /// Seconds since the epoch.
  public var at: Double
  public var actor: String
  public var action: String
  public var app: String?
  public var before: String?
  public var after: String?
  /// JSON text.
  public var detail: String

  public init(
    id: Int64, at: Double, actor: String, action: String, app: String?, before: String?, after: String?,
    detail: String
  ) {
    self.id = id
    self.at = at
    self.actor = actor
    self.action = action
    self.app = app
    self.before = before
    self.after = after
    self.detail = detail
  }

  /// The statement that appends an entry in the transaction of the batch it joins: what an administrative change
  /// adds to its own batch, so that the entry is stored exactly when the change is (a refused change leaves none).
  package static func statement(
    actor: String, action: String, app: String?, before: String? = nil, after: String? = nil, detail: String = "{}"
  ) -> PGStatement {
    .query("SELECT tipsd.audit_append($1, $2, $3, $4, $5, $6)", [actor, action, app, before, after, detail])
  }
}

extension AuditEntry {
  /// An admin's change of one account (`account.import`, `account.delete`), for the change's own batch.
  /// Recorded under the account's app, with the `sub` its app knows it by.
  static func accountChange(_ action: String, _ account: String) -> PGStatement {
    .query(
      "SELECT tipsd.audit_append('admin', $1, $3, NULL, NULL, json_build_object('account', $2::text)::text)",
      [action, AccountKey.subject(of: account), AccountKey.app(of: account)])
  }
}

/// A published catalog version as PostgreSQL keeps it (`tipsd.catalog_versions`).
public struct CatalogVersion: Sendable, Equatable {
  public var app: String
  public var version: Int
  /// The catalog's JSON text (absent in history listings).
  public var catalog: String?
  public var digest: String
  public var note: String
  public var actor: String
  /// Seconds since the epoch.
  public var createdAt: Double
}

/// Catalogs published through the admin API and the audit log (schema 13). Every change is one batch — one
/// transaction — with its audit entry and its notification to the fleet (`catalog published APP`).
extension HostedStore {
  /// Publishes `catalog` (already linted) as the app's next version and makes it current; answers the version.
  public func publishCatalog(
    app: String, catalog: String, digest: String, note: String, actor: String,
    completion: @escaping (Result<Int, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        "SELECT tipsd.catalog_publish($1, $2, $3, $4, $5)", [app, catalog, digest, note, actor]),
      // `catalog.published` to the app's webhooks, in the publish's own transaction (its outbox: #48).
      .query(
        """
        SELECT tipsd.webhook_enqueue($1, 'catalog.published', json_build_object('app', $1::text, 'version',
          (SELECT version FROM tipsd.catalog_current WHERE app = $1), 'digest', $2::text)::text, NULL)
        """, [app, digest]),
    ]) { result in
      completion(result.map { Int($0.first?.rows.first?.first.flatMap { $0 } ?? "") ?? 0 })
    }
  }

  /// Makes an earlier version current again (`catalogs/rollback`).
  public func setCurrentCatalog(
    app: String, version: Int, actor: String, completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        "SELECT tipsd.catalog_set_current($1, $2::integer, $3, 'catalog.rollback', json_build_object('version', $2::integer)::text)",
        [app, String(version), actor]),
      // `catalog.rolledBack` to the app's webhooks, in the rollback's own transaction.
      .query(
        """
        SELECT tipsd.webhook_enqueue($1, 'catalog.rolledBack',
          json_build_object('app', $1::text, 'version', $2::integer)::text, NULL)
        """, [app, String(version)]),
    ]) { completion($0.map { _ in () }) }
  }

  /// Schedules version `version` of `app` to be made current at `at` (seconds since the epoch); answers its id.
  public func scheduleCatalog(
    app: String, version: Int, at: Double, actor: String, completion: @escaping (Result<Int64, HostedError>) -> Void
  ) {
    writer.send([
      .query(
        "SELECT tipsd.catalog_schedule($1, $2::integer, $3::double precision, $4)",
        [app, String(version), "\(at)", actor])
    ]) { result in
      completion(result.map { Int64($0.first?.rows.first?.first.flatMap { $0 } ?? "") ?? 0 })
    }
  }

  /// Applies the schedules that fell due (each once, whichever node claims it first); answers how many.
  public func applyDueCatalogs(completion: @escaping (Result<Int, HostedError>) -> Void) {
    writer.send([.query("SELECT tipsd.catalog_apply_due()")]) { result in
      completion(result.map { Int($0.first?.rows.first?.first.flatMap { $0 } ?? "") ?? 0 })
    }
  }

  /// The app's current catalog when its version is not `known` (nil: nothing newer to read, or none published).
  public func currentCatalog(
    app: String, unless known: Int?, completion: @escaping (Result<CatalogVersion?, HostedError>) -> Void
  ) {
    reader.send([
      .query(
        """
        SELECT v.version, v.catalog, v.digest, v.note, v.actor, extract(epoch FROM v.created_at)::double precision
        FROM tipsd.catalog_current c JOIN tipsd.catalog_versions v ON v.app = c.app AND v.version = c.version
        WHERE c.app = $1 AND c.version IS DISTINCT FROM $2::integer
        """, [app, known.map { String($0) }])
    ]) { result in
      completion(result.map { Self.versions(app: app, $0.first?.rows ?? []).first })
    }
  }

  /// Versions of `app`, with their catalogs when `versions` names them (else every version, without catalogs),
  /// newest first; and the current version.
  public func catalogVersions(
    app: String, versions: [Int]? = nil,
    completion: @escaping (Result<(versions: [CatalogVersion], current: Int?), HostedError>) -> Void
  ) {
    let select =
      versions == nil
      ? "SELECT version, NULL::text, digest, note, actor, extract(epoch FROM created_at)::double precision"
      : "SELECT version, catalog, digest, note, actor, extract(epoch FROM created_at)::double precision"
    reader.send([
      .query(
        select
          + " FROM tipsd.catalog_versions WHERE app = $1 AND ($2::integer[] IS NULL OR version = ANY ($2::integer[]))"
          + " ORDER BY version DESC",
        [app, versions.map { PGSchema.integerArray($0.map { Int64($0) }) }]),
      .query("SELECT version FROM tipsd.catalog_current WHERE app = $1", [app]),
    ]) { result in
      completion(
        result.map { results in
          (
            Self.versions(app: app, results.first?.rows ?? []),
            results.last?.rows.first?.first.flatMap { $0 }.flatMap { Int($0) }
          )
        })
    }
  }

  /// Audit entries after `after` (by id), of `app` when named, oldest first, at most `limit`.
  public func auditEntries(
    app: String?, after: Int64?, limit: Int, completion: @escaping (Result<[AuditEntry], HostedError>) -> Void
  ) {
    reader.send([
      .query(
        """
        SELECT id, extract(epoch FROM at)::double precision, actor, action, app, before, after, detail
        FROM tipsd.audit WHERE ($1::text IS NULL OR app = $1) AND id > $2::bigint ORDER BY id LIMIT $3::integer
        """, [app, String(after ?? 0), String(limit)])
    ]) { result in
      completion(
        result.map { results in
          (results.first?.rows ?? []).compactMap { row in
            guard row.count == 8, let id = row[0].flatMap({ Int64($0) }), let at = row[1].flatMap({ Double($0) }),
              let actor = row[2], let action = row[3]
            else { return nil }
            return AuditEntry(
              id: id, at: at, actor: actor, action: action, app: row[4], before: row[5], after: row[6],
              detail: row[7] ?? "{}")
          }
        })
    }
  }

  /// Appends one audit entry in a transaction of its own (a change that has no batch of its own to join, such as an
  /// admin's sign-in).
  public func appendAudit(
    actor: String, action: String, app: String?, before: String? = nil, after: String? = nil, detail: String = "{}",
    completion: @escaping (Result<Void, HostedError>) -> Void = { _ in }
  ) {
    writer.send([
      AuditEntry.statement(actor: actor, action: action, app: app, before: before, after: after, detail: detail)
    ]) { completion($0.map { _ in () }) }
  }

  /// Runs `statements` and an audit entry in one transaction (the change is stored exactly when its entry is).
  package func sendAudited(
    _ statements: [PGStatement], audit: PGStatement, completion: @escaping (Result<Void, HostedError>) -> Void
  ) {
    writer.send(statements + [audit]) { completion($0.map { _ in () }) }
  }

  private static func versions(app: String, _ rows: [[String?]]) -> [CatalogVersion] {
    rows.compactMap { row in
      guard row.count == 6, let version = row[0].flatMap({ Int($0) }), let digest = row[2] else { return nil }
      return CatalogVersion(
        app: app, version: version, catalog: row[1], digest: digest, note: row[3] ?? "", actor: row[4] ?? "",
        createdAt: row[5].flatMap { Double($0) } ?? 0)
    }
  }
}
