import TipsProtocol

extension Handlers {
  /// The admin's catalogs (published through PostgreSQL) and the audit log (#48).
  /// The catalogs of a hosted node whose store is PostgreSQL, for an admin session.
  static func catalogs(_ context: RequestContext) throws(ResponseError) -> HostedCatalogs {
    let hosted = try admin(context)
    guard let catalogs = hosted.catalogs else {
      throw .forbidden(
        method: context.method, "catalogs and the audit log are kept in PostgreSQL (tipsd serve --hosted postgres://…)")
    }
    return catalogs
  }

  static func registerCatalogs(_ table: inout HandlerTable) {

    table.onAsync(CatalogsPublishRequest.self) { request, context, reply in
      do throws(ResponseError) { try catalogs(context).publish(request, reply: reply) } catch { reply(.failure(error)) }
    }
    table.onAsync(CatalogsDiffRequest.self) { request, context, reply in
      do throws(ResponseError) { try catalogs(context).diff(request, reply: reply) } catch { reply(.failure(error)) }
    }
    table.onAsync(CatalogsRollbackRequest.self) { request, context, reply in
      do throws(ResponseError) { try catalogs(context).rollback(request, reply: reply) } catch {
        reply(.failure(error))
      }
    }
    table.onAsync(CatalogsScheduleRequest.self) { request, context, reply in
      do throws(ResponseError) { try catalogs(context).schedule(request, reply: reply) } catch {
        reply(.failure(error))
      }
    }
    table.onAsync(CatalogsHistoryRequest.self) { request, context, reply in
      do throws(ResponseError) { try catalogs(context).history(request, reply: reply) } catch { reply(.failure(error)) }
    }
    table.onAsync(AuditListRequest.self) { request, context, reply in
      do throws(ResponseError) { try catalogs(context).auditList(request, reply: reply) } catch {
        reply(.failure(error))
      }
    }
  }
}
