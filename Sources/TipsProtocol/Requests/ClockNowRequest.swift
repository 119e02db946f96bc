public import TipsJSON

/// `clock/now`: the engine's current time, and whether it is the virtual clock.
public struct ClockNowRequest: EncodableRequest, Hashable {
  public static let method = "clock/now"
  public static let params: [ParamSpec] = []
  public init() {}
  public init(from p: Params) throws(ResponseError) {}

  public struct Response: ResultValue, Hashable {
    /// Seconds since the Unix epoch.
    public var now: Double
    public var virtual: Bool
    public init(now: Double, virtual: Bool) {
      self.now = now
      self.virtual = virtual
    }
    public static let shape = ResultShape.object(ObjectShape(["now", "virtual"]), schema: nil)
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("now")
      writer.writeDouble(now)
      writer.key("virtual")
      writer.writeBool(virtual)
      writer.endObject()
    }
  }
}

extension ClockNowRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(now: try r.double("now"), virtual: try r.bool("virtual"))
  }
}

extension ClockNowRequest {
  public var encodedParams: JSONValue? { nil }
}
