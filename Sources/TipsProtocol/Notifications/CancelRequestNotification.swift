/// `$/cancelRequest`: accepted and ignored (every request is answered within the turn it arrives in).
public struct CancelRequestNotification: ClientNotificationType {
  public static let method = "$/cancelRequest"
  public static let params: [ParamSpec] = [.required("id")]
}
