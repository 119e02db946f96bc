public import TipsJSON

/// `rpc.discover`: the protocol's OpenRPC document (allowed before `initialize`).
public struct DiscoverRequest: RequestType, Hashable {
  public static let method = "rpc.discover"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = []
  public init() {}
  public init(from p: Params) throws(ResponseError) {}

  public struct Response: ResultValue, Hashable {
    /// The document, as embedded at build time.
    public var document: JSONValue
    public init(document: JSONValue) { self.document = document }
    public static let shape = ResultShape.document
    public func write(to writer: inout JSONWriter) { writer.write(document) }
  }
}

extension DiscoverRequest.Response {
  /// The document is read as it is (any JSON object).
  public init(json: JSONValue) throws(ResultDecodingError) {
    guard json.objectValue != nil else { throw ResultDecodingError("result must be an object (got \(json.typeName))") }
    self.init(document: json)
  }
}
