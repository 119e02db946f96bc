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
    if let refusal = services.mode.catalogFileRefusal {
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
      try services.mode.catalogChanging(catalogService, from: catalogService.current, to: next)
      applied = try catalogService.apply(next, to: engine, digest: digest)
    } catch {
      logger.error("catalog reload failed part-way", [("trigger", trigger), ("error", "\(error)")])
      return CatalogReloadRequest.Response(
        applied: false,
        diagnostics: diagnostics + [
          ["severity": "error", "file": .string(catalogService.path), "message": .string("\(error)")]
        ])
    }
    let (mutation, summary) = applied
    services.mode.catalogChanged(mutation, version: catalogService.version, digest: digest, trigger: trigger)
    services.requestEndOfTurn()
    logger.info("catalog reloaded", [("trigger", trigger)] + summary.logMetadata)
    return CatalogReloadRequest.Response(
      applied: true, added: summary.added, removed: summary.removed, changed: summary.changed,
      unchanged: summary.unchanged, diagnostics: diagnostics)
  }
}
