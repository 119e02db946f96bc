/// `tips/performAction`: records a tap on one of a tip's actions, invalidates the tip (`actionPerformed`, unless
/// `invalidate: false` here or on the action's definition) and tells every `actions/subscribe` subscriber.
public struct PerformActionRequest: RequestType, Hashable {
  public static let method = "tips/performAction"
  public static let traits: MethodTraits = .syncedChange
  public static let params: [ParamSpec] = [
    .required("id"), .required("actionId"), .optional("invalidate"), .optional("idempotencyKey"),
  ]

  public var id: String
  public var actionID: String
  /// nil: as the action's definition says (`invalidate`, default true).
  public var invalidate: Bool?

  public init(id: String, actionID: String, invalidate: Bool? = nil) {
    self.id = id
    self.actionID = actionID
    self.invalidate = invalidate
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    actionID = try p.string("actionId")
    invalidate = try p.optionalBool("invalidate")
  }

  public typealias Response = TipStateInfo
}
