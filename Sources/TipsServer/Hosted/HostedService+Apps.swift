import TipsAuth
import TipsCatalog
import TipsEngine
import TipsHosted
import TipsProtocol
import TipsSystem
import TipsTransport

/// One app of the deployment other than `default`, on this node: its sign-in, its catalog, its budgets (#48).
final class AppRuntime {
  let app: HostedApp
  let verifier: any Authenticator
  /// Its catalog in force (its file's, or a version published for it).
  let catalog: CatalogService
  /// Its accounts' request rate, when the app sets its own `accountRate`.
  var limiter: RateLimiter?

  init(app: HostedApp, verifier: any Authenticator, catalog: CatalogService) {
    self.app = app
    self.verifier = verifier
    self.catalog = catalog
    limiter = app.accountRate.map { RateLimiter(rate: $0) }
  }
}

// Apps per deployment (#48): the apps of `--apps FILE` beside the app `default` (the `--catalog` and `--jwt-*`
// flags'). A session names its app at `initialize` (`app`) or by the WebSocket path `/apps/<id>`; its token must
// verify against that app's keys and audience, and its account is keyed by (app, sub) (``AccountKey``).

extension HostedService {
  /// Reads `--apps FILE`: each app's keys and catalog, checked as at start (a broken one refuses the whole file).
  static func loadApps(
    _ file: String, configuration: HostedConfiguration, messagesDirectory: String?
  ) throws(ServerError) -> [String: AppRuntime] {
    var runtimes: [String: AppRuntime] = [:]
    for app in try HostedApp.load(file) {
      let verifier: any Authenticator
      do {
        if let secret = app.jwtSecretFile {
          try TokenFile.checkPrivate(secret, what: "app \(app.id)'s JWT secret file")
        }
        verifier = try TokenVerifier.load(
          secretFile: app.jwtSecretFile, jwksFile: app.jwksFile, audiences: app.audiences, issuer: app.issuer,
          leeway: configuration.leeway, owner: .app(app.id))
      } catch {
        throw ServerError("--apps \(file): app \(app.id): \(error)")
      }
      let catalog = CatalogService(path: app.catalogPath, messagesDirectory: messagesDirectory)
      let report = catalog.load()
      guard let loaded = report.catalog else {
        throw ServerError(
          "--apps \(file): app \(app.id): catalog \(app.catalogPath) has \(report.errors.count) error(s): "
            + report.errors.prefix(3).map(\.textLine).joined(separator: "; "))
      }
      catalog.adopt(loaded)
      runtimes[app.id] = AppRuntime(app: app, verifier: verifier, catalog: catalog)
    }
    return runtimes
  }

  /// Every app this deployment serves: `default`, then the file's in id order.
  var appIDs: [String] { [AccountKey.defaultApp] + apps.keys.sorted() }

  /// Whether `app` is served here.
  func serves(_ app: String) -> Bool { app == AccountKey.defaultApp || apps[app] != nil }

  /// The keys `app`'s tokens are verified with.
  func verifier(of app: String) -> any Authenticator { apps[app]?.verifier ?? verifier }

  /// The catalog an account's engine registers (its app's).
  func catalog(ofAccount account: String) -> CatalogService { catalog(ofApp: AccountKey.app(of: account)) }

  /// The catalog in force for `app`.
  func catalog(ofApp app: String) -> CatalogService { apps[app]?.catalog ?? catalog }

  /// The overrides of the app an account belongs to (nil: the deployment's flags hold).
  func appOverrides(of account: String) -> HostedApp? { appRuntime(of: account)?.app }

  /// The runtime of the app `account` belongs to; nil for the default app and when the deployment has no `--apps`
  /// (asked several times a request: then neither the key is read nor a name hashed).
  func appRuntime(of account: String) -> AppRuntime? {
    guard !apps.isEmpty else { return nil }
    return apps[AccountKey.app(of: account)]
  }

  /// Takes `cost` from the account's request rate (its app's `accountRate`, else `--account-rate`): nil within it,
  /// else the seconds until it has room.
  func takeRate(_ account: String, cost: Double = 1) -> Double? {
    if let runtime = appRuntime(of: account), runtime.limiter != nil {
      return runtime.limiter!.take(account, now: clock.now(), cost: cost)
    }
    return limiter.take(account, now: clock.now(), cost: cost)
  }

  /// The account's request rate a second.
  func rate(of account: String) -> Double { appOverrides(of: account)?.accountRate ?? configuration.accountRate }

  /// The resident accounts of `app`.
  func tenants(of app: String) -> [Tenant] {
    tenants.values.filter { AccountKey.app(of: $0.account ?? "") == app }
  }

  /// Brings every resident account of `app` from catalog `old` to `next` (its observers told, its time re-armed); the
  /// caller adopts `next` once all followed. The one path of a reload, a publish and a SIGHUP, for every app.
  func moveCatalog(of app: String, with catalog: CatalogService, from old: Catalog, to next: Catalog) throws {
    for tenant in tenants(of: app) {
      let (mutation, _) = try catalog.change(tenant.engine, from: old, to: next)
      services.record(mutation, in: tenant)
      tenant.history.refreshTrackedEvents(tenant.engine)
      updateTime(of: tenant.account ?? "")
    }
  }

  /// Makes `next` the catalog of `app` (not `default`: the server's reload path serves it): every resident account
  /// of the app follows, its observers told. False when it failed part-way (logged).
  @discardableResult
  func applyAppCatalog(_ app: String, _ next: Catalog, digest: String?, trigger: String) -> Bool {
    guard let runtime = apps[app] else { return false }
    do {
      try moveCatalog(of: app, with: runtime.catalog, from: runtime.catalog.current, to: next)
    } catch {
      logger.error("catalog of an app failed part-way", [("app", app), ("trigger", trigger), ("error", "\(error)")])
      return false
    }
    runtime.catalog.adopt(next, digest: digest)
    services.requestEndOfTurn()
    logger.info("catalog reloaded", [("app", app), ("trigger", trigger)])
    return true
  }

  /// SIGHUP: the apps file read again. Apps added start serving; an app whose keys changed verifies with the new
  /// ones; an app whose catalog file changed applies it (unless it serves a published version); a broken file keeps
  /// the apps in force. Apps no longer listed refuse new sign-ins (their open sessions go on).
  func reloadApps() {
    guard let file = configuration.appsFile else { return }
    let loaded: [String: AppRuntime]
    do {
      loaded = try Self.loadApps(
        file, configuration: configuration, messagesDirectory: services.configuration.messagesDirectory)
    } catch {
      logger.error("hosted: apps not reloaded; the apps in force stay", [("error", "\(error)")])
      return
    }
    let previous = apps
    apps = loaded
    for (id, runtime) in loaded {
      guard let before = previous[id] else { continue }
      let next = runtime.catalog.current
      runtime.catalog.adopt(before.catalog.current, digest: before.catalog.version)
      if catalogs?.applied[id] == nil {
        applyAppCatalog(id, next, digest: nil, trigger: "SIGHUP")
      }
    }
    signInGuard.keysReloaded()
    logger.info("hosted: apps reloaded", [("apps", appIDs.joined(separator: ","))])
  }

  /// The app a WebSocket path names (`/apps/<id>`, a query string aside); nil for any other path (the app is then
  /// `initialize`'s, or `default`).
  static func app(ofPath path: String?) -> String? {
    guard var path else { return nil }
    if let query = path.firstIndex(of: "?") { path = String(path[..<query]) }
    guard path.hasPrefix("/apps/") else { return nil }
    let id = path.dropFirst("/apps/".count)
    return String(id.hasSuffix("/") ? id.dropLast() : id)
  }
}
