public import TipsEngine
public import TipsJSON

/// `tips/configure`: the global display frequency ("no more than one new tip per period").
public struct ConfigureRequest: RequestType, Hashable {
  public static let method = "tips/configure"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [.required("displayFrequency")]

  public var displayFrequency: DisplayFrequency

  public init(displayFrequency: DisplayFrequency) { self.displayFrequency = displayFrequency }

  public init(from p: Params) throws(ResponseError) {
    displayFrequency = try p.enumeration("displayFrequency", DisplayFrequency.self)
  }

  public struct Response: ResultValue, Hashable {
    public var displayFrequency: DisplayFrequency
    public init(displayFrequency: DisplayFrequency) { self.displayFrequency = displayFrequency }
    public static let shape = ResultShape.object(ObjectShape(["displayFrequency"]), schema: nil)
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("displayFrequency")
      writer.writeString(displayFrequency.rawValue)
      writer.endObject()
    }
  }
}

extension ConfigureRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(displayFrequency: try r.enumeration("displayFrequency", DisplayFrequency.self))
  }
}
