/// `tips/performAction`: records a tap on one of a tip's actions, invalidates the tip (`actionPerformed`, unless
/// `invalidate: false`) and tells every `actions/subscribe` subscriber.
public struct PerformActionRequest: RequestType, Hashable {
  public static let method = "tips/performAction"
  public static let params: [ParamSpec] = [.required("id"), .required("actionId"), .optional("invalidate")]

  public var id: String
  public var actionID: String
  public var invalidate: Bool

  public init(id: String, actionID: String, invalidate: Bool = true) {
    self.id = id
    self.actionID = actionID
    self.invalidate = invalidate
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    actionID = try p.string("actionId")
    invalidate = try p.optionalBool("invalidate") ?? true
  }

  public typealias Response = TipStateInfo
}
