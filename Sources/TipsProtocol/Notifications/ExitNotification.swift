/// `exit`: over stdio the daemon exits (status 0 after `shutdown`, else 1, as LSP); over a socket only this
/// connection closes.
public struct ExitNotification: ClientNotificationType {
  public static let method = "exit"
  public static let params: [ParamSpec] = []
}
