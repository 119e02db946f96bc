public import TipsEngine
public import TipsJSON

/// `groups/register`: a TipGroup (`ordered` or `firstAvailable`), replacing one with the same id; with `schedule`,
/// it has a current tip only between `from` and `until`.
public struct RegisterGroupRequest: RequestType, Hashable {
  public static let method = "groups/register"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [
    .required("id"), .required("priority"), .required("tips"), .optional("schedule"),
  ]

  public var group: TipGroupDefinition

  public init(group: TipGroupDefinition) { self.group = group }

  public init(from p: Params) throws(ResponseError) {
    let id = try p.string("id")
    let priority = try p.enumeration("priority", GroupPriority.self)
    var schedule: TipSchedule?
    if let value = p.optionalValue("schedule") {
      schedule = try p.decoding { () throws(EngineError) in try TipSchedule(json: value, path: "schedule") }
    }
    group = TipGroupDefinition(id: id, priority: priority, tipIDs: try p.stringArray("tips"), schedule: schedule)
  }

  public struct Response: ResultValue, Hashable {
    public var id: String
    public var currentTip: String?
    public init(id: String, currentTip: String?) {
      self.id = id
      self.currentTip = currentTip
    }
    public static let shape = ResultShape.object(ObjectShape(["id", "currentTip"]), schema: nil)
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("id")
      writer.writeString(id)
      writer.key("currentTip")
      writer.writeOptionalString(currentTip)
      writer.endObject()
    }
  }
}

extension RegisterGroupRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(id: try r.string("id"), currentTip: try r.optionalString("currentTip"))
  }
}
