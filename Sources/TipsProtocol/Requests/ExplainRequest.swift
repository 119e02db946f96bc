public import TipsJSON

/// `tips/explain`: why a tip is or is not showing — each rule's value, what else holds it back, its budget.
public struct ExplainRequest: EncodableRequest, Hashable {
  public static let method = "tips/explain"
  public static let params: [ParamSpec] = [.required("id")]

  public var id: String

  public init(id: String) { self.id = id }

  public init(from p: Params) throws(ResponseError) {
    id = try p.string("id")
  }

  public struct Response: ResultValue, Hashable {
    /// The engine's explanation object (see `TipsEngine.Explanation`).
    public var explanation: JSONObject
    /// The same, for people.
    public var lines: [String]
    public init(explanation: JSONObject, lines: [String]) {
      self.explanation = explanation
      self.lines = lines
    }
    public static let shape = ResultShape.object(
      ObjectShape(
        [
          "id", "status", "reason", "shouldDisplay", "override", "rules", "heldBy", "displayCount",
          "displayedDuration", "nextChangeAt", "lines",
        ], optional: ["reason", "override"]),
      schema: "Explanation")
    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      for (key, value) in explanation where key != "lines" { writer.member(key, value) }
      writer.key("lines")
      writer.writeStringArray(lines)
      writer.endObject()
    }
  }
}

extension ExplainRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    var explanation = r.object
    explanation["lines"] = nil
    self.init(explanation: explanation, lines: try r.strings("lines"))
  }
}

extension ExplainRequest {
  public var encodedParams: JSONValue? { ["id": .string(id)] }
}
