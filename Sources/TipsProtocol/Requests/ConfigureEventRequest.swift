public import TipsJSON

/// `events/configure`: how many donations of an event are kept (newest first).
public struct ConfigureEventRequest: RequestType, Hashable {
  public static let method = "events/configure"
  public static let params: [ParamSpec] = [.required("id"), .required("maxDonations")]

  public var id: String
  public var maxDonations: Int

  public init(id: String, maxDonations: Int) {
    self.id = id
    self.maxDonations = maxDonations
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    maxDonations = try p.int("maxDonations")
  }

  public struct Response: ResultValue, Hashable {
    public var id: String
    public var maxDonations: Int
    public init(id: String, maxDonations: Int) {
      self.id = id
      self.maxDonations = maxDonations
    }
    public static let shape = ResultShape.object(ObjectShape(["id", "maxDonations"]), schema: nil)
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("id")
      writer.writeString(id)
      writer.key("maxDonations")
      writer.writeInt(maxDonations)
      writer.endObject()
    }
  }
}

extension ConfigureEventRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(id: try r.string("id"), maxDonations: try r.int("maxDonations"))
  }
}
