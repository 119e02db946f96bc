import TipsEngine
public import TipsJSON

/// `events/configure`: the donation limits of an event (iOS 26's `Tips.DonationLimit(maximumCount:maximumAge:)`):
/// how many donations are kept (newest first, `maxDonations`), and how old a donation may be before every rule of
/// the event stops seeing it and it is dropped (`maxAge`, a duration object like a rule's `within`). Each is
/// optional — a limit not given stays as it is — but at least one must be.
public struct ConfigureEventRequest: RequestType, Hashable {
  public static let method = "events/configure"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [.required("id"), .optional("maxDonations"), .optional("maxAge")]

  public var id: String
  public var maxDonations: Int?
  /// Seconds.
  public var maxAge: Double?

  public init(id: String, maxDonations: Int? = nil, maxAge: Double? = nil) {
    self.id = id
    self.maxDonations = maxDonations
    self.maxAge = maxAge
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    maxDonations = try p.optionalInt("maxDonations")
    if let value = p.optionalValue("maxAge") {
      maxAge = try p.decoding { () throws(EngineError) in try EventRule.duration(value, "maxAge") }
    }
    guard maxDonations != nil || maxAge != nil else {
      throw p.invalid("maxDonations", "or params.maxAge is required (give either or both)")
    }
  }

  /// The event's limits after the call: `maxDonations` null when only the engine's default applies, `maxAge` null
  /// when none is set.
  public struct Response: ResultValue, Hashable {
    public var id: String
    public var maxDonations: Int?
    public var maxAge: Double?
    public init(id: String, maxDonations: Int?, maxAge: Double?) {
      self.id = id
      self.maxDonations = maxDonations
      self.maxAge = maxAge
    }
    public static let shape = ResultShape.object(ObjectShape(["id", "maxDonations", "maxAge"]), schema: nil)
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("id")
      writer.writeString(id)
      writer.key("maxDonations")
      if let maxDonations { writer.writeInt(maxDonations) } else { writer.writeNull() }
      writer.key("maxAge")
      if let maxAge { writer.write(EventRule.durationJSON(maxAge)) } else { writer.writeNull() }
      writer.endObject()
    }
  }
}

extension ConfigureEventRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    var maxAge: Double?
    if let value = r.optionalValue("maxAge"), value != .null {
      do {
        maxAge = try EventRule.duration(value, "maxAge")
      } catch {
        throw r.invalid("maxAge", "is not a duration: \(error)")
      }
    }
    self.init(id: try r.string("id"), maxDonations: try r.optionalInt("maxDonations"), maxAge: maxAge)
  }
}
