public import TipsEngine
public import TipsJSON

/// `Action`: one of a tip's buttons, with its position. Actions always travel as an array (seed 000).
public struct ActionInfo: Sendable, Hashable {
  public var id: String
  public var title: String
  public var index: Int

  public init(id: String, title: String, index: Int) {
    self.id = id
    self.title = title
    self.index = index
  }

  public static let shape = ObjectShape(["id", "title", "index"])

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("id")
    writer.writeString(id)
    writer.key("title")
    writer.writeString(title)
    writer.key("index")
    writer.writeInt(index)
    writer.endObject()
  }

  /// Every action of a tip with its index.
  public static func all(_ actions: [TipAction]) -> [ActionInfo] {
    actions.enumerated().map { ActionInfo(id: $1.id, title: $1.title, index: $0) }
  }
}

/// `TipContent`: what a frontend draws, in the copy best matching a client's locale.
public struct TipContent: Sendable, Hashable {
  public var id: String
  public var title: String
  public var message: String?
  public var image: String?
  public var actions: [ActionInfo]
  /// The `localizations` key whose copy is shown, or nil for the tip's own copy.
  public var locale: String?
  /// How the tip may be presented (only when its definition says).
  public var presentation: TipPresentation?
  /// The definition's `metadata`, untouched (only when it has some).
  public var metadata: JSONObject?

  public static let shape = ObjectShape(
    ["id", "title", "message", "image", "actions", "locale", "presentation", "metadata"],
    optional: ["presentation", "metadata"])

  /// The content of `definition` in `variant`'s copy for a client whose `initialize` locale is `locale`; an
  /// unregistered tip (nil) has empty content.
  public init(_ definition: TipDefinition?, id: String, locale: String?, variant: String? = nil) {
    guard let base = definition else {
      self.id = id
      title = ""
      actions = []
      return
    }
    let definition = base.withVariant(variant)
    let key = definition.localizationKey(for: locale)
    let copy = key == nil ? definition : definition.localized(for: locale)
    self.id = copy.id
    title = copy.title
    message = copy.message
    image = copy.image
    actions = ActionInfo.all(copy.actions)
    self.locale = key
    presentation = definition.presentation
    metadata = definition.metadata
  }

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("id")
    writer.writeString(id)
    writer.key("title")
    writer.writeString(title)
    writer.key("message")
    writer.writeOptionalString(message)
    writer.key("image")
    writer.writeOptionalString(image)
    writer.key("actions")
    writer.beginArray()
    for action in actions { action.write(to: &writer) }
    writer.endArray()
    writer.key("locale")
    writer.writeOptionalString(locale)
    if let presentation {
      writer.key("presentation")
      writer.beginObject()
      writer.key("style")
      writer.writeString(presentation.style.rawValue)
      if let edge = presentation.arrowEdge {
        writer.key("arrowEdge")
        writer.writeString(edge.rawValue)
      }
      writer.endObject()
    }
    if let metadata {
      writer.key("metadata")
      writer.write(.object(metadata))
    }
    writer.endObject()
  }
}

/// A tip's status on the wire: `"status"` and, exactly when invalidated, `"reason"`.
public struct StatusInfo: Sendable, Hashable {
  public var status: TipStatus

  public init(_ status: TipStatus) { self.status = status }

  public var name: String { status.name }
  public var reason: String? { status.reason?.rawValue }

  /// Writes the `status` (and `reason`) members into an open object.
  public func writeMembers(to writer: inout JSONWriter) {
    writer.key("status")
    writer.writeString(name)
    if let reason {
      writer.key("reason")
      writer.writeString(reason)
    }
  }
}

/// `TipState`: status, `shouldDisplay`, display budget and content — the result of every method that changes or
/// reports one tip.
public struct TipStateInfo: ResultValue, Hashable {
  public var id: String
  public var shouldDisplay: Bool
  public var status: StatusInfo
  public var displayCount: Int
  public var displayedDuration: Double
  /// The A/B variant this install sees, for a tip with `variants`.
  public var variant: String?
  public var tip: TipContent

  public static let objectShape = ObjectShape(
    ["id", "shouldDisplay", "status", "reason", "displayCount", "displayedDuration", "variant", "tip"],
    optional: ["reason", "variant"])
  public static let shape = ResultShape.object(objectShape, schema: "TipState")

  public init(
    id: String, shouldDisplay: Bool, status: TipStatus, displayCount: Int, displayedDuration: Double,
    variant: String? = nil, tip: TipContent
  ) {
    self.id = id
    self.shouldDisplay = shouldDisplay
    self.status = StatusInfo(status)
    self.displayCount = displayCount
    self.displayedDuration = displayedDuration
    self.variant = variant
    self.tip = tip
  }

  /// The state of a registered tip as the engine reports it, with content in `locale`'s copy.
  public init(_ state: TipState, engine: Engine, locale: String?) {
    let record = engine.record(of: state.id)
    self.init(
      id: state.id, shouldDisplay: state.shouldDisplay, status: state.status, displayCount: record.displayCount,
      displayedDuration: record.displayedDuration, variant: state.variant,
      tip: TipContent(engine.definition(of: state.id), id: state.id, locale: locale, variant: state.variant))
  }

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("id")
    writer.writeString(id)
    writer.key("shouldDisplay")
    writer.writeBool(shouldDisplay)
    status.writeMembers(to: &writer)
    writer.key("displayCount")
    writer.writeInt(displayCount)
    writer.key("displayedDuration")
    writer.writeDouble(displayedDuration)
    if let variant {
      writer.key("variant")
      writer.writeString(variant)
    }
    writer.key("tip")
    tip.write(to: &writer)
    writer.endObject()
  }
}

/// `TipStates`: `{"tips": [TipState]}`.
public struct TipStatesResult: ResultValue, Hashable {
  public var tips: [TipStateInfo]

  public init(tips: [TipStateInfo]) { self.tips = tips }

  public static let shape = ResultShape.object(ObjectShape(["tips"]), schema: "TipStates")

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("tips")
    writer.beginArray()
    for tip in tips { tip.write(to: &writer) }
    writer.endArray()
    writer.endObject()
  }
}

/// `GroupCurrentTip`: a group and its current tip.
public struct GroupCurrentTip: Sendable, Hashable {
  public var group: String
  public var tipID: String?

  public init(group: String, tipID: String?) {
    self.group = group
    self.tipID = tipID
  }

  public static let shape = ObjectShape(["group", "tipId"])

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("group")
    writer.writeString(group)
    writer.key("tipId")
    writer.writeOptionalString(tipID)
    writer.endObject()
  }
}

/// `Ids`: `{"ids": [String]}`.
public struct IdsResult: ResultValue, Hashable {
  public var ids: [String]

  public init(ids: [String]) { self.ids = ids }

  public static let shape = ResultShape.object(ObjectShape(["ids"]), schema: "Ids")

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("ids")
    writer.writeStringArray(ids)
    writer.endObject()
  }
}

/// `Subscription`: `{"subscription": id}`.
public struct SubscriptionResult: ResultValue, Hashable {
  public var subscription: String

  public init(subscription: String) { self.subscription = subscription }

  public static let shape = ResultShape.object(ObjectShape(["subscription"]), schema: "Subscription")

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("subscription")
    writer.writeString(subscription)
    writer.endObject()
  }
}

/// `Removed`: `{"removed": Bool}`.
public struct RemovedResult: ResultValue, Hashable {
  public var removed: Bool

  public init(removed: Bool) { self.removed = removed }

  public static let shape = ResultShape.object(ObjectShape(["removed"]), schema: "Removed")

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("removed")
    writer.writeBool(removed)
    writer.endObject()
  }
}

/// `Now`: `{"now": seconds}`.
public struct NowResult: ResultValue, Hashable {
  public var now: Double

  public init(now: Double) { self.now = now }

  public static let shape = ResultShape.object(ObjectShape(["now"]), schema: "Now")

  public func write(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("now")
    writer.writeDouble(now)
    writer.endObject()
  }
}

extension JSONWriter {
  /// A string, or `null`.
  public mutating func writeOptionalString(_ value: String?) {
    if let value { writeString(value) } else { writeNull() }
  }

  /// An array of strings.
  public mutating func writeStringArray(_ values: [String]) {
    beginArray()
    for value in values { writeString(value) }
    endArray()
  }
}

// MARK: - Reading results back

extension ActionInfo: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(id: try r.string("id"), title: try r.string("title"), index: try r.int("index"))
  }
}

extension TipContent: DecodableResult {
  public init(
    id: String, title: String, message: String? = nil, image: String? = nil, actions: [ActionInfo] = [],
    locale: String? = nil, presentation: TipPresentation? = nil, metadata: JSONObject? = nil
  ) {
    self.id = id
    self.title = title
    self.message = message
    self.image = image
    self.actions = actions
    self.locale = locale
    self.presentation = presentation
    self.metadata = metadata
  }

  public init(from r: ResultReader) throws(ResultDecodingError) {
    var presentation: TipPresentation?
    if let value = r.optionalValue("presentation") {
      do {
        presentation = try TipPresentation(json: value, path: "\(r.path).presentation")
      } catch {
        throw ResultDecodingError("\(error)")
      }
    }
    self.init(
      id: try r.string("id"), title: try r.string("title"), message: try r.optionalString("message"),
      image: try r.optionalString("image"), actions: try r.decodeArray("actions", of: ActionInfo.self),
      locale: try r.optionalString("locale"), presentation: presentation,
      metadata: try r.optionalNested("metadata")?.object)
  }
}

extension StatusInfo {
  /// Reads `status` (and `reason`) from the object that carries them.
  public init(from r: ResultReader) throws(ResultDecodingError) {
    switch try r.string("status") {
    case "pending": self.init(.pending)
    case "available": self.init(.available)
    case "invalidated": self.init(.invalidated(try r.enumeration("reason", InvalidationReason.self)))
    case let other: throw r.invalid("status", "is not pending, available or invalidated (got \"\(other)\")")
    }
  }
}

extension TipStateInfo: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      id: try r.string("id"), shouldDisplay: try r.bool("shouldDisplay"), status: try StatusInfo(from: r).status,
      displayCount: try r.int("displayCount"), displayedDuration: try r.double("displayedDuration"),
      variant: try r.optionalString("variant"), tip: try r.decode("tip", as: TipContent.self))
  }
}

extension TipStatesResult: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(tips: try r.decodeArray("tips", of: TipStateInfo.self))
  }
}

extension GroupCurrentTip: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(group: try r.string("group"), tipID: try r.optionalString("tipId"))
  }
}

extension IdsResult: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) { self.init(ids: try r.strings("ids")) }
}

extension SubscriptionResult: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(subscription: try r.string("subscription"))
  }
}

extension RemovedResult: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) { self.init(removed: try r.bool("removed")) }
}

extension NowResult: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) { self.init(now: try r.double("now")) }
}
