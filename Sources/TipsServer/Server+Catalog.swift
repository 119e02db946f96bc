import TipsCatalog
import TipsEngine
import TipsJSON
import TipsProtocol

extension Server {
  /// Reloads the catalog file and applies what changed (SIGHUP, `catalog/reload`, `--watch`), in this event-loop
  /// turn: its writes join the turn's commit and subscribers are told of every tip that starts or stops displaying.
  /// A catalog that does not load changes nothing; its problems are logged and returned.
  @discardableResult
  func reloadCatalog(trigger: String) -> CatalogReloadRequest.Response {
    guard let catalogService else { return CatalogReloadRequest.Response(applied: false) }
    if let refusal = services.hosted?.catalogs?.fileReloadRefusal {
      return CatalogReloadRequest.Response(
        applied: false,
        diagnostics: [["severity": "error", "file": .string(catalogService.path), "message": .string(refusal)]])
    }
    return applyCatalog(catalogService.load(), digest: nil, trigger: trigger)
  }

  /// Applies a loaded catalog (the file's, or a published version's `digest`, #48) as a reload does.
  func applyCatalog(_ report: CatalogReport, digest: String?, trigger: String) -> CatalogReloadRequest.Response {
    guard let catalogService else { return CatalogReloadRequest.Response(applied: false) }
    let diagnostics = report.diagnostics.map { $0.json }
    guard let next = report.catalog else {
      logger.error(
        "catalog reload refused; the catalog in force keeps serving",
        [("trigger", trigger), ("errors", String(report.errors.count))])
      for error in report.errors { logger.error("catalog: \(error.textLine)") }
      return CatalogReloadRequest.Response(applied: false, diagnostics: diagnostics)
    }
    let applied: (Mutation, CatalogService.Summary)
    do {
      if let hosted = services.hosted {
        // Every resident account's engine follows the catalog; accounts loaded later register the new one.
        let old = catalogService.current
        for tenant in hosted.tenants.values {
          let (mutation, _) = try catalogService.change(tenant.engine, from: old, to: next)
          services.record(mutation, in: tenant)
          tenant.history.refreshTrackedEvents(tenant.engine)
          hosted.updateTime(of: tenant.account ?? "")
        }
        applied = try catalogService.apply(next, to: engine, digest: digest)
      } else {
        applied = try catalogService.apply(next, to: engine, digest: digest)
      }
    } catch {
      logger.error("catalog reload failed part-way", [("trigger", trigger), ("error", "\(error)")])
      return CatalogReloadRequest.Response(
        applied: false,
        diagnostics: diagnostics + [
          ["severity": "error", "file": .string(catalogService.path), "message": .string("\(error)")]
        ])
    }
    let (mutation, summary) = applied
    if let local {
      services.record(mutation, in: local)
      local.history.refreshTrackedEvents(engine)
    }
    services.requestEndOfTurn()
    logger.info("catalog reloaded", [("trigger", trigger)] + summary.logMetadata)
    // Hosted: every node of the fleet reloads its catalog too (unless this reload came from another node's).
    if let hosted = services.hosted, digest == nil, let version = catalogService.version,
      trigger != "another node reloaded it"
    {
      hosted.store.notifyCatalog(version: version)
    }
    return CatalogReloadRequest.Response(
      applied: true, added: summary.added, removed: summary.removed, changed: summary.changed,
      unchanged: summary.unchanged, diagnostics: diagnostics)
  }
}
