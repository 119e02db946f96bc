import TipsCatalog
import TipsEngine
import TipsHosted
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsSystem
import TipsTransport

/// Catalogs published through the admin API (#48), kept in PostgreSQL (schema 13), and the audit log.
///
/// Each node serves its app's current published version once there is one (until then, the `--catalog` file): it
/// reads it when PostgreSQL notifies the fleet (`catalog published APP`, sent in the publish's own transaction) and,
/// as a net for a notification missed while the listener was away, every second. The same tick applies the schedules
/// that fell due (`tipsd.catalog_apply_due`: each claimed and marked applied in one transaction, so exactly once,
/// by whichever node gets it first — a schedule survives restarts and failover because it is a row). A version is
/// applied through the catalog reload's path (``Server/applyCatalog(_:digest:trigger:)``): every resident account is
/// re-evaluated and its observers told of every tip that starts or stops displaying.
final class HostedCatalogs {
  /// Who an admin's change is recorded as: the admin token has no name of its own.
  static let adminActor = "admin"

  let store: HostedStore
  unowned let hosted: HostedService
  let logger: Logger
  /// Makes a linted catalog the one in force on this node (the catalog reload's path); false when it failed.
  let apply: (Catalog, _ digest: String, _ trigger: String) -> Bool
  /// Called once a publish or a rollback committed: `(app, type, data)`, type `catalog.published` or
  /// `catalog.rolledBack`. (Their webhook events are not sent from here: the publish's and the rollback's own
  /// transactions enqueue them in the outbox, `HostedStore+Catalogs.swift`, so none is lost with the node.)
  var onCatalogEvent: (String, String, JSONObject) -> Void = { _, _, _ in }

  /// The published version this node serves, per app (none: the `--catalog` file).
  private(set) var applied: [String: Int] = [:]
  private var checking = false
  private var checkAgain = false
  private var applyingDue = false
  private var timer: (any LoopTimer)?
  private var ticks = 0
  /// Whether the current versions were read once since the node started.
  private var settled = false

  init(
    store: HostedStore, hosted: HostedService, loop: any EventLoop, logger: Logger,
    apply: @escaping (Catalog, String, String) -> Bool
  ) {
    self.store = store
    self.hosted = hosted
    self.logger = logger
    self.apply = apply
    let tick = loop.makeTimer()
    tick.keepsLoopAlive = false
    // Every 250 ms until the first read of the current versions (a node starting serves its file until then), then
    // every second.
    tick.start(afterMilliseconds: 50, repeatEvery: 250) { [unowned self] in
      self.ticks += 1
      if !self.settled || self.ticks % 4 == 0 { self.tick() }
    }
    timer = tick
  }

  func stop() {
    timer?.close()
    timer = nil
  }

  /// A `catalog …` fleet notification: true when it was a publish (handled here), false for a file reload's.
  func noticed(_ payload: String) -> Bool {
    guard payload.hasPrefix("published ") else { return false }
    check()
    return true
  }

  /// The refusal of `catalog/reload` once the app serves a published version (the file is no longer read).
  var fileReloadRefusal: String? {
    guard let version = applied["default"] else { return nil }
    return "app default serves published catalog version \(version) (catalogs/publish, catalogs/rollback); "
      + "the --catalog file is not read again"
  }

  // MARK: The tick

  private func tick() {
    if store.isWritable && !applyingDue {
      applyingDue = true
      store.applyDueCatalogs { [weak self] result in
        guard let self else { return }
        self.applyingDue = false
        if case .success(let count) = result, count > 0 {
          self.logger.info("catalogs: scheduled publishes applied", [("count", String(count))])
        }
      }
    }
    check()
  }

  /// Reads each app's current version when it is not the one in force here, and applies it.
  func check() {
    guard store.isReadable else { return }
    guard !checking else {
      checkAgain = true
      return
    }
    checking = true
    let apps = hosted.appIDs
    var left = apps.count
    for app in apps {
      store.currentCatalog(app: app, unless: applied[app]) { [weak self] result in
        guard let self else { return }
        left -= 1
        defer {
          if left == 0 {
            self.checking = false
            if self.checkAgain {
              self.checkAgain = false
              self.check()
            }
          }
        }
        if case .success = result, left == 0 { self.settled = true }
        switch result {
        case .failure(let error):
          self.logger.warning("catalogs: cannot read the current catalog", [("app", app), ("error", error.message)])
        case .success(nil):
          return
        case .success(let stored?):
          let report = CatalogLoader.check(
            bytes: Array((stored.catalog ?? "").utf8), file: "\(app)@\(stored.version)")
          guard let catalog = report.catalog else {
            self.logger.error(
              "catalogs: the current catalog does not load here; the one in force keeps serving",
              [("app", app), ("version", String(stored.version)), ("errors", String(report.errors.count))])
            self.applied[app] = stored.version
            return
          }
          let trigger = "catalog version \(stored.version) published"
          let done =
            app == AccountKey.defaultApp
            ? self.apply(catalog, stored.digest, trigger)
            : self.hosted.applyAppCatalog(app, catalog, digest: stored.digest, trigger: trigger)
          if done { self.applied[app] = stored.version }
        }
      }
    }
  }

  // MARK: Admin methods

  func checkApp(_ app: String, method: String) throws(ResponseError) {
    guard hosted.serves(app) else {
      throw .invalidParams(
        "\(method): params.app: unknown app \"\(app)\" (this deployment serves: "
          + "\(hosted.appIDs.joined(separator: ", ")))")
    }
  }

  /// Lints `catalog` as `tipsd lint` does: the catalog, or -32602 carrying the diagnostics.
  static func lint(_ catalog: JSONObject, method: String) throws(ResponseError) -> (Catalog, [UInt8]) {
    let bytes = JSONValue.object(catalog).serialized()
    let report = CatalogLoader.check(bytes: bytes, file: "params.catalog")
    guard let checked = report.catalog else {
      throw .invalidParams(
        "\(method): params.catalog: \(report.errors.count) lint error\(report.errors.count == 1 ? "" : "s") "
          + "(nothing changed): " + report.errors.prefix(3).map(\.message).joined(separator: "; "),
        data: ["path": "params.catalog", "diagnostics": .array(report.diagnostics.map { $0.json })])
    }
    return (checked, bytes)
  }

  /// 16 hex digits of FNV-1a (64-bit) over a catalog's bytes (the file's version uses the same).
  static func digest(_ bytes: [UInt8]) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  func publish(
    _ request: CatalogsPublishRequest, reply: @escaping (Result<CatalogsPublishRequest.Response, ResponseError>) -> Void
  ) {
    let method = CatalogsPublishRequest.method
    let catalog: Catalog
    let bytes: [UInt8]
    do throws(ResponseError) {
      try checkApp(request.app, method: method)
      (catalog, bytes) = try Self.lint(request.catalog, method: method)
    } catch {
      return reply(.failure(error))
    }
    let digest = Self.digest(bytes)
    if request.dryRun {
      let (resident, changed) = dryRun(catalog, app: request.app)
      let diff = CatalogDiff(from: hosted.catalog(ofApp: request.app).current, to: catalog)
      return reply(
        .success(
          .init(value: [
            "version": nil, "digest": .string(digest), "dryRun": true, "residentAccounts": .int(Int64(resident)),
            "changedAccounts": .int(Int64(changed)), "diff": diff.json,
          ])))
    }
    store.publishCatalog(
      app: request.app, catalog: String(decoding: bytes, as: UTF8.self), digest: digest, note: request.note,
      actor: Self.adminActor
    ) { [weak self] result in
      switch result {
      case .failure(let error):
        reply(.failure(.unavailable(method: method, retryAfter: 1, error.message)))
      case .success(let version):
        reply(.success(.init(value: ["version": .int(Int64(version)), "digest": .string(digest), "dryRun": false])))
        self?.logger.info("catalogs: published", [("app", request.app), ("version", String(version))])
        self?.check()
        self?.onCatalogEvent(
          request.app, "catalog.published",
          ["app": .string(request.app), "version": .int(Int64(version)), "digest": .string(digest)])
      }
    }
  }

  /// How many accounts this node holds loaded, and of those how many would see some tip's `shouldDisplay`
  /// change under `next`: each account's merged state loaded on a fresh engine with the catalog in force and on one
  /// with `next`, and their tips compared.
  func dryRun(_ next: Catalog, app: String) -> (resident: Int, changed: Int) {
    var changed = 0
    var resident = 0
    let current = hosted.catalog(ofApp: app).current
    for (account, tenant) in hosted.tenants where AccountKey.app(of: account) == app {
      // An account still loading has no merged state yet: it loads with whatever catalog is in force then.
      guard let model = tenant.model else { continue }
      resident += 1
      let snapshot = AccountSnapshot(model: model)
      func displays(_ catalog: Catalog) -> [String: Bool]? {
        let engine = Engine(clock: hosted.clock, configuration: EngineConfiguration(canonicalDonationOrder: true))
        do {
          _ = try engine.setInstallID(account)
          _ = try catalog.register(in: engine)
          _ = try AccountLoader.load(
            account: account, device: hosted.configuration.node, engine: engine, snapshot: snapshot, operations: [],
            wallNow: System.wallClockSeconds(), decides: false)
        } catch {
          return nil
        }
        var result: [String: Bool] = [:]
        for state in engine.states() { result[state.id] = state.shouldDisplay }
        return result
      }
      guard let before = displays(current), let after = displays(next) else { continue }
      let ids = Set(before.keys).union(after.keys)
      if ids.contains(where: { (before[$0] ?? false) != (after[$0] ?? false) }) { changed += 1 }
    }
    return (resident, changed)
  }

  func rollback(
    _ request: CatalogsRollbackRequest,
    reply: @escaping (Result<CatalogsRollbackRequest.Response, ResponseError>) -> Void
  ) {
    let method = CatalogsRollbackRequest.method
    do throws(ResponseError) { try checkApp(request.app, method: method) } catch { return reply(.failure(error)) }
    store.setCurrentCatalog(app: request.app, version: request.version, actor: Self.adminActor) { [weak self] result in
      switch result {
      case .failure(let error):
        reply(.failure(Self.refusal(error, method: method, version: request.version)))
      case .success:
        reply(.success(.init(value: ["version": .int(Int64(request.version))])))
        self?.check()
        self?.onCatalogEvent(
          request.app, "catalog.rolledBack", ["app": .string(request.app), "version": .int(Int64(request.version))])
      }
    }
  }

  func schedule(
    _ request: CatalogsScheduleRequest,
    reply: @escaping (Result<CatalogsScheduleRequest.Response, ResponseError>) -> Void
  ) {
    let method = CatalogsScheduleRequest.method
    do throws(ResponseError) { try checkApp(request.app, method: method) } catch { return reply(.failure(error)) }
    store.scheduleCatalog(app: request.app, version: request.version, at: request.at, actor: Self.adminActor) {
      result in
      switch result {
      case .failure(let error): reply(.failure(Self.refusal(error, method: method, version: request.version)))
      case .success(let id):
        reply(
          .success(
            .init(value: [
              "schedule": .int(id), "version": .int(Int64(request.version)), "at": .double(request.at),
            ])))
      }
    }
  }

  func history(
    _ request: CatalogsHistoryRequest,
    reply: @escaping (Result<CatalogsHistoryRequest.Response, ResponseError>) -> Void
  ) {
    let method = CatalogsHistoryRequest.method
    do throws(ResponseError) { try checkApp(request.app, method: method) } catch { return reply(.failure(error)) }
    store.catalogVersions(app: request.app) { result in
      reply(
        result.map { listing in
          .init(value: [
            "app": .string(request.app), "current": listing.current.map { .int(Int64($0)) } ?? nil,
            "versions": .array(
              listing.versions.map { version in
                [
                  "version": .int(Int64(version.version)), "digest": .string(version.digest),
                  "note": .string(version.note), "actor": .string(version.actor),
                  "createdAt": .double(version.createdAt),
                ]
              }),
          ])
        }.mapError { .unavailable(method: method, retryAfter: 1, $0.message) })
    }
  }

  func diff(
    _ request: CatalogsDiffRequest, reply: @escaping (Result<CatalogsDiffRequest.Response, ResponseError>) -> Void
  ) {
    let method = CatalogsDiffRequest.method
    do throws(ResponseError) { try checkApp(request.app, method: method) } catch { return reply(.failure(error)) }
    store.catalogVersions(app: request.app, versions: [request.from, request.to]) { result in
      switch result {
      case .failure(let error): reply(.failure(.unavailable(method: method, retryAfter: 1, error.message)))
      case .success(let listing):
        var catalogs: [Int: Catalog] = [:]
        for version in listing.versions {
          catalogs[version.version] =
            CatalogLoader.check(bytes: Array((version.catalog ?? "").utf8), file: "v\(version.version)").catalog
        }
        for (key, version) in [("from", request.from), ("to", request.to)] where catalogs[version] == nil {
          return reply(
            .failure(
              .invalidParams(
                "\(method): params.\(key): app \(request.app) has no catalog version \(version)",
                data: ["path": .string("params.\(key)")])))
        }
        let diff = CatalogDiff(from: catalogs[request.from]!, to: catalogs[request.to]!)
        guard case .object(var value) = diff.json else { return }
        value["from"] = .int(Int64(request.from))
        value["to"] = .int(Int64(request.to))
        reply(.success(.init(value: value)))
      }
    }
  }

  func auditList(
    _ request: AuditListRequest, reply: @escaping (Result<AuditListRequest.Response, ResponseError>) -> Void
  ) {
    store.auditEntries(app: request.app, after: request.after, limit: request.limit) { result in
      reply(
        result.map { entries in
          .init(value: [
            "entries": .array(entries.map(\.json)),
            "next": entries.count == request.limit ? entries.last.map { .int($0.id) } ?? nil : nil,
          ])
        }.mapError { .unavailable(method: AuditListRequest.method, retryAfter: 1, $0.message) })
    }
  }

  /// Records an administrative change that has no batch of its own to join (an admin's sign-in; account exports,
  /// imports and deletions until their batches carry ``AuditEntry/statement(actor:action:app:before:after:detail:)``).
  func record(_ action: String, app: String? = "default", detail: JSONObject = [:]) {
    store.appendAudit(actor: Self.adminActor, action: action, app: app, detail: JSONValue.object(detail).jsonString) {
      [weak self] result in
      if case .failure(let error) = result {
        self?.logger.error("audit: an entry was not stored", [("action", action), ("error", error.message)])
      }
    }
  }

  static func refusal(_ error: HostedError, method: String, version: Int) -> ResponseError {
    if error.message.contains("has no catalog version") {
      return .invalidParams(
        "\(method): params.version: there is no catalog version \(version)", data: ["path": "params.version"])
    }
    return .unavailable(method: method, retryAfter: 1, error.message)
  }
}

extension CatalogDiff {
  /// `catalogs/diff`'s members (without `from` and `to`).
  var json: JSONValue {
    [
      "added": .array(added.map { .string($0) }), "removed": .array(removed.map { .string($0) }),
      "changed": .array(
        changed.map {
          [
            "id": .string($0.id), "rules": .bool($0.rules), "copy": .bool($0.copy), "variants": .bool($0.variants),
            "other": .bool($0.other),
          ]
        }),
      "others": .array(others.map { .string($0) }), "displayFrequency": .bool(displayFrequency),
    ]
  }
}

extension AuditEntry {
  /// `audit/list`'s entry.
  var json: JSONValue {
    [
      "id": .int(id), "at": .double(at), "actor": .string(actor), "action": .string(action),
      "app": app.map { .string($0) } ?? nil, "before": before.map { .string($0) } ?? nil,
      "after": after.map { .string($0) } ?? nil,
      "detail": (try? JSONParser.parse(detail)) ?? .object([:]),
    ]
  }
}
