public import TipsJSON

/// `tips/observe`: subscribes to `tips/shouldDisplayChanged` for some tips (or all, including tips registered
/// later) and to `groups/currentTipChanged` for some groups. Naming only groups watches no tips.
public struct ObserveRequest: RequestType, Hashable {
  public static let method = "tips/observe"
  public static let params: [ParamSpec] = [.optional("ids"), .optional("groups")]

  public var ids: [String]?
  public var groups: [String]?

  public init(ids: [String]? = nil, groups: [String]? = nil) {
    self.ids = ids
    self.groups = groups
  }

  public init(from p: Params) throws(ResponseError) {
    ids = try p.optionalStringArray("ids")
    groups = try p.optionalStringArray("groups")
  }

  /// The tips watched: nil for every tip (neither ids nor groups given).
  public var watchedTips: Set<String>? { ids.map(Set.init) ?? (groups == nil ? nil : []) }

  public struct Response: ResultValue, Hashable {
    public var subscription: String
    /// The current state of each watched tip.
    public var tips: [TipStateInfo]
    /// The current tip of each watched group.
    public var groups: [GroupCurrentTip]
    /// Watched ids that name no registered tip (a typo, or a tip registered later: it is still watched). Only
    /// written when not empty.
    public var unknown: [String]
    public init(subscription: String, tips: [TipStateInfo], groups: [GroupCurrentTip], unknown: [String] = []) {
      self.subscription = subscription
      self.tips = tips
      self.groups = groups
      self.unknown = unknown
    }
    public static let shape = ResultShape.object(
      ObjectShape(["subscription", "tips", "groups", "unknown"], optional: ["unknown"]), schema: "ObserveResult")
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("subscription")
      writer.writeString(subscription)
      writer.key("tips")
      writer.beginArray()
      for tip in tips { tip.write(to: &writer) }
      writer.endArray()
      writer.key("groups")
      writer.beginArray()
      for group in groups { group.write(to: &writer) }
      writer.endArray()
      if !unknown.isEmpty {
        writer.key("unknown")
        writer.writeStringArray(unknown)
      }
      writer.endObject()
    }
  }
}

extension ObserveRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      subscription: try r.string("subscription"), tips: try r.decodeArray("tips", of: TipStateInfo.self),
      groups: try r.decodeArray("groups", of: GroupCurrentTip.self),
      unknown: r.optionalValue("unknown") == nil ? [] : try r.strings("unknown"))
  }
}
