/// Every JSON-RPC method name tipsd knows, as string constants.
///
/// Client-to-server requests and notifications plus the server-to-client
/// notifications listed in `serverNotifications`. `all` is the registry in
/// byte-wise alphabetical order.
public enum Method {
  /// `initialize`: Handshake; must be the first request.
  public static let initialize = "initialize"
  /// `initialized`: Client notification after `initialize`; accepted and ignored.
  public static let initialized = "initialized"
  /// `shutdown`: Asks the server to stop accepting work.
  public static let shutdown = "shutdown"
  /// `exit`: Asks the server process to exit.
  public static let exit = "exit"
  /// `$/cancelRequest`: Notification cancelling an in-flight request.
  public static let cancelRequest = "$/cancelRequest"
  /// `rpc.discover`: Describes the server's methods.
  public static let rpcDiscover = "rpc.discover"
  /// `tips/configure`: Configures the tips engine.
  public static let tipsConfigure = "tips/configure"
  /// `tips/register`: Registers a tip and its rules.
  public static let tipsRegister = "tips/register"
  /// `tips/unregister`: Removes a tip.
  public static let tipsUnregister = "tips/unregister"
  /// `groups/register`: Registers a tip group.
  public static let groupsRegister = "groups/register"
  /// `groups/unregister`: Removes a tip group.
  public static let groupsUnregister = "groups/unregister"
  /// `parameters/define`: Declares a rule parameter.
  public static let parametersDefine = "parameters/define"
  /// `parameters/set`: Sets a rule parameter's value.
  public static let parametersSet = "parameters/set"
  /// `events/donate`: Records an occurrence of an event.
  public static let eventsDonate = "events/donate"
  /// `events/configure`: Sets an event's donation limit (`maxDonations`).
  public static let eventsConfigure = "events/configure"
  /// `tips/invalidate`: Invalidates a tip (e.g. the user performed the action).
  public static let tipsInvalidate = "tips/invalidate"
  /// `tips/resetEligibility`: Resets a tip's eligibility state.
  public static let tipsResetEligibility = "tips/resetEligibility"
  /// `tips/displayed`: Reports that a tip was shown.
  public static let tipsDisplayed = "tips/displayed"
  /// `tips/status`: Returns a tip's status.
  public static let tipsStatus = "tips/status"
  /// `tips/explain`: Explains why a tip is or is not eligible.
  public static let tipsExplain = "tips/explain"
  /// `tips/observe`: Subscribes to a tip's display-eligibility changes.
  public static let tipsObserve = "tips/observe"
  /// `tips/unobserve`: Ends a `tips/observe` subscription.
  public static let tipsUnobserve = "tips/unobserve"
  /// `tips/performAction`: Performs one of a tip's actions.
  public static let tipsPerformAction = "tips/performAction"
  /// `actions/subscribe`: Subscribes to performed tip actions.
  public static let actionsSubscribe = "actions/subscribe"
  /// `actions/unsubscribe`: Ends an `actions/subscribe` subscription.
  public static let actionsUnsubscribe = "actions/unsubscribe"
  /// `testing/showAllTips`: Testing: force every tip to display.
  public static let testingShowAllTips = "testing/showAllTips"
  /// `testing/hideAllTips`: Testing: force every tip to hide.
  public static let testingHideAllTips = "testing/hideAllTips"
  /// `testing/showTips`: Testing: force the given tips to display.
  public static let testingShowTips = "testing/showTips"
  /// `testing/hideTips`: Testing: force the given tips to hide.
  public static let testingHideTips = "testing/hideTips"
  /// `testing/clear`: Testing: remove testing overrides.
  public static let testingClear = "testing/clear"
  /// `datastore/reset`: Erases all persisted state.
  public static let datastoreReset = "datastore/reset"
  /// `clock/advance`: Advances the virtual clock.
  public static let clockAdvance = "clock/advance"
  /// `clock/set`: Sets the virtual clock.
  public static let clockSet = "clock/set"
  /// `clock/now`: Returns the (virtual) current time.
  public static let clockNow = "clock/now"

  // MARK: Server-to-client notifications

  /// `tips/shouldDisplayChanged`: Server notification: a tip's display eligibility changed.
  public static let tipsShouldDisplayChanged = "tips/shouldDisplayChanged"
  /// `groups/currentTipChanged`: Server notification: a group's current tip changed.
  public static let groupsCurrentTipChanged = "groups/currentTipChanged"
  /// `tips/actionPerformed`: Server notification: a tip action was performed.
  public static let tipsActionPerformed = "tips/actionPerformed"

  /// Every method name, sorted byte-wise.
  public static let all: [String] = [
    cancelRequest,
    actionsSubscribe,
    actionsUnsubscribe,
    clockAdvance,
    clockNow,
    clockSet,
    datastoreReset,
    eventsConfigure,
    eventsDonate,
    exit,
    groupsCurrentTipChanged,
    groupsRegister,
    groupsUnregister,
    initialize,
    initialized,
    parametersDefine,
    parametersSet,
    rpcDiscover,
    shutdown,
    testingClear,
    testingHideAllTips,
    testingHideTips,
    testingShowAllTips,
    testingShowTips,
    tipsActionPerformed,
    tipsConfigure,
    tipsDisplayed,
    tipsExplain,
    tipsInvalidate,
    tipsObserve,
    tipsPerformAction,
    tipsRegister,
    tipsResetEligibility,
    tipsShouldDisplayChanged,
    tipsStatus,
    tipsUnobserve,
    tipsUnregister,
  ]

  /// The notifications the server sends to clients.
  public static let serverNotifications: Set<String> = [
    tipsShouldDisplayChanged,
    groupsCurrentTipChanged,
    tipsActionPerformed,
  ]
}
