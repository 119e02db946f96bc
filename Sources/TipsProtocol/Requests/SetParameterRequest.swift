public import TipsJSON

/// `parameters/set`: sets a defined parameter; tips whose rules read it are re-evaluated.
public struct SetParameterRequest: RequestType, Hashable {
  public static let method = "parameters/set"
  public static let traits: MethodTraits = .syncedChange
  public static let params: [ParamSpec] = [.required("id"), .required("value"), .optional("idempotencyKey")]

  public var id: String
  public var value: JSONValue

  public init(id: String, value: JSONValue) {
    self.id = id
    self.value = value
  }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
    value = try p.value("value")
  }

  public struct Response: ResultValue, Hashable {
    public var id: String
    /// The value now in force (an Int set on a Double parameter reads back as a Double).
    public var value: JSONValue
    public init(id: String, value: JSONValue) {
      self.id = id
      self.value = value
    }
    public static let shape = ResultShape.object(ObjectShape(["id", "value"]), schema: nil)
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("id")
      writer.writeString(id)
      writer.key("value")
      writer.write(value)
      writer.endObject()
    }
  }
}

extension SetParameterRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(id: try r.string("id"), value: try r.value("value"))
  }
}
