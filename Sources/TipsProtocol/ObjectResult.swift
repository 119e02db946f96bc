public import TipsJSON

/// A result object written as it is held (the catalogs' and the audit log's admin methods: small, never on a hot
/// path). `members` order the writing; ``ResultValue/shape`` names them for the comparison with openrpc.json.
public protocol ObjectResult: ResultValue, Hashable {
  var value: JSONObject { get }
  init(value: JSONObject)
}

extension ObjectResult {
  public func write(to writer: inout JSONWriter) {
    guard case .object(let shape, _) = Self.shape else { return writer.write(.object(value)) }
    writer.beginObject()
    for member in shape.members {
      guard let item = value[member] else { continue }
      writer.key(member)
      writer.write(item)
    }
    writer.endObject()
  }

  public init(json: JSONValue) throws(ResultDecodingError) {
    guard case .object(let object) = json else { throw ResultDecodingError("result: expected an object") }
    self.init(value: object)
  }
}
