public import TipsJSON

/// Every message type of the protocol, in one place (the shape of `LanguageServerProtocol`'s `Messages.swift`).
///
/// Dispatch, positional params, the unknown-param check, `initialize`'s capability lists and `rpc.discover`'s
/// consistency test all derive from these lists; a test compares them with `protocol/openrpc.json` both ways.
public enum Messages {
  /// Requests a client sends, byte-wise sorted by method name.
  public static let requests: [any RequestType.Type] = [
    AccountsDeleteRequest.self,
    AccountsExportRequest.self,
    AccountsImportRequest.self,
    AccountsListRequest.self,
    SubscribeActionsRequest.self,
    UnsubscribeActionsRequest.self,
    AnalyticsReadRequest.self,
    AnalyticsSubscribeRequest.self,
    AnalyticsUnsubscribeRequest.self,
    AuditListRequest.self,
    AuthRefreshRequest.self,
    CatalogReloadRequest.self,
    CatalogsDiffRequest.self,
    CatalogsHistoryRequest.self,
    CatalogsPublishRequest.self,
    CatalogsRollbackRequest.self,
    CatalogsScheduleRequest.self,
    ClockAdvanceRequest.self,
    ClockNowRequest.self,
    ClockSetRequest.self,
    ResetDatastoreRequest.self,
    ConfigureEventRequest.self,
    DonateRequest.self,
    RegisterGroupRequest.self,
    UnregisterGroupRequest.self,
    InitializeRequest.self,
    InspectStateRequest.self,
    MetricsGetRequest.self,
    DefineParametersRequest.self,
    SetParameterRequest.self,
    DiscoverRequest.self,
    ShutdownRequest.self,
    SyncPullRequest.self,
    SyncPushRequest.self,
    SyncStatusRequest.self,
    ClearTestingOverridesRequest.self,
    HideAllTipsRequest.self,
    HideTipsRequest.self,
    ShowAllTipsRequest.self,
    ShowTipsRequest.self,
    ConfigureRequest.self,
    DisplayedRequest.self,
    ExplainRequest.self,
    InstantiateRequest.self,
    InvalidateRequest.self,
    ObserveRequest.self,
    PerformActionRequest.self,
    RegisterTipsRequest.self,
    ResetEligibilityRequest.self,
    ResumeRequest.self,
    SetVariantRequest.self,
    StatusRequest.self,
    SuppressRequest.self,
    UnobserveRequest.self,
    UnregisterTipsRequest.self,
    WebhooksCreateRequest.self,
    WebhooksDeleteRequest.self,
    WebhooksListRequest.self,
    WebhooksReplayRequest.self,
    WebhooksTestRequest.self,
  ]

  /// Notifications a client sends, byte-wise sorted.
  public static let clientNotifications: [any ClientNotificationType.Type] = [
    CancelRequestNotification.self,
    ExitNotification.self,
    InitializedNotification.self,
  ]

  /// Notifications the daemon sends, byte-wise sorted.
  public static let serverNotifications: [any ServerNotificationType.Type] = [
    AnalyticsEventNotification.self,
    CurrentTipChangedNotification.self,
    InspectChangedNotification.self,
    SyncChangedNotification.self,
    ActionPerformedNotification.self,
    ShouldDisplayChangedNotification.self,
  ]

  /// Request types by method name.
  public static let requestsByMethod: [String: any RequestType.Type] = {
    var byMethod: [String: any RequestType.Type] = [:]
    for type in requests { byMethod[type.method] = type }
    return byMethod
  }()

  /// Every method a client may send (requests and notifications), byte-wise sorted — `capabilities.methods`.
  public static let clientMethods: [String] = {
    var names: [String] = []
    for type in requests { names.append(type.method) }
    for type in clientNotifications { names.append(type.method) }
    return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  }()

  /// Every notification the daemon may send, byte-wise sorted — `capabilities.notifications`.
  public static let serverNotificationMethods: [String] = {
    var names: [String] = []
    for type in serverNotifications { names.append(type.method) }
    return names
  }()

  /// Decodes a request's params into its type: positional params mapped to names, unknown params refused (the one
  /// place that does), then the type's own decoding.
  public static func decode<R: RequestType>(_ type: R.Type, params: JSONValue?) throws(ResponseError) -> R {
    let p = try Params(params, method: R.method, positional: R.positionalParams)
    if !R.acceptsUnknownParams {
      for (key, _) in p.object where !R.params.contains(where: { $0.name == key }) {
        // A misspelt param would otherwise be silently ignored (`tips/status {"id": …}` answering for every tip).
        throw .unknownParam(method: R.method, name: key, allowed: R.params.map(\.name))
      }
    }
    return try R(from: p)
  }
}
