/// `initialized`: the client's acknowledgement of `initialize`; accepted and ignored.
public struct InitializedNotification: ClientNotificationType {
  public static let method = "initialized"
  public static let params: [ParamSpec] = []
}
