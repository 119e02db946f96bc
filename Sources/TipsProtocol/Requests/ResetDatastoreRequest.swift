/// `datastore/reset`: Erases all persisted state: donations, parameters, statuses, counts, cooldown.
public struct ResetDatastoreRequest: RequestType, Hashable {
  public static let method = "datastore/reset"
  public static let traits: MethodTraits = .syncedChange
  public static let isTestingOnly = true
  public static let params: [ParamSpec] = [.optional("idempotencyKey")]
  public init() {}
  public init(from p: Params) throws(ResponseError) {}
  public typealias Response = NullResult
}
