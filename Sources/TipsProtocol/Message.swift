public import TipsJSON

/// One param a method takes, as `protocol/openrpc.json` declares it.
public struct ParamSpec: Sendable, Hashable {
  /// The member name in a by-name params object.
  public var name: String
  /// Whether a request without it is refused (-32602 "missing required param").
  public var required: Bool

  public init(name: String, required: Bool) {
    self.name = name
    self.required = required
  }

  /// A param the request must carry.
  public static func required(_ name: String) -> ParamSpec { ParamSpec(name: name, required: true) }
  /// A param the request may carry (absent and `null` are the same).
  public static func optional(_ name: String) -> ParamSpec { ParamSpec(name: name, required: false) }
}

/// The members a result object may carry and which it always carries — what `protocol/openrpc.json`'s result
/// schema says, checked both ways by a test.
public struct ObjectShape: Sendable, Hashable {
  /// Every member, in the order the daemon writes them.
  public var members: [String]
  /// The members always present.
  public var required: Set<String>

  /// A shape whose members are all always present, except those in `optional`.
  public init(_ members: [String], optional: Set<String> = []) {
    self.members = members
    self.required = Set(members).subtracting(optional)
  }
}

/// What a method's result is.
public enum ResultShape: Sendable, Hashable {
  /// Always `null`.
  case null
  /// An object with these members; `schema` names the component schema it is (`TipState`), if any.
  case object(ObjectShape, schema: String?)
  /// A document not described member by member (`rpc.discover` returns the OpenRPC document itself).
  case document
}

/// A method's result: written straight to bytes by the daemon (no intermediate `JSONValue` on the hot path), and
/// read back by clients (`tipsd`'s commands, the tests) from the reply's `result`.
public protocol ResultValue: Sendable {
  /// What the result looks like, for the registry's comparison with `protocol/openrpc.json`.
  static var shape: ResultShape { get }
  /// Writes exactly one JSON value.
  func write(to writer: inout JSONWriter)
  /// Reads a reply's `result` (an object result conforms to ``DecodableResult`` and gets this for free).
  init(json: JSONValue) throws(ResultDecodingError)
  /// Writes the whole success reply `{"jsonrpc":"2.0","id":…,"result":…}` (by default through ``write(to:)``; a
  /// result on the hot path composes it in one append).
  func writeReply(id: RequestID?, to writer: inout JSONWriter)
}

extension ResultValue {
  public func writeReply(id: RequestID?, to writer: inout JSONWriter) {
    OutgoingMessage.writeResult(id: id, to: &writer) { write(to: &$0) }
  }
}

extension ResultValue {
  /// The result as a `JSONValue` (tests, `tipsd call`).
  public var json: JSONValue {
    var writer = JSONWriter()
    write(to: &writer)
    // The writer only produces valid JSON.
    return (try? JSONParser.parse(writer.bytes)) ?? .null
  }
}

/// A request a client sends and the daemon answers: its method name, its params and its result type — the shape
/// of `LanguageServerProtocol`'s `HoverRequest`. One type per file under `Requests/`, listed in ``Messages``.
public protocol RequestType: Sendable {
  /// The result the daemon replies with.
  associatedtype Response: ResultValue
  /// The JSON-RPC method name.
  static var method: String { get }
  /// Every param, in the order `protocol/openrpc.json` lists them. Anything else is refused in one place
  /// (``Messages/decode(_:params:)``), unless ``acceptsUnknownParams``.
  static var params: [ParamSpec] { get }
  /// The param names of a positional (array) params list, in order; empty: params must be an object.
  static var positionalParams: [String] { get }
  /// Whether members not in ``params`` are accepted (only `initialize`: newer clients may send more).
  static var acceptsUnknownParams: Bool { get }
  /// Whether the method is for tests only (testing overrides, datastore reset, moving the clock): refused with
  /// -32011 unless the daemon runs with `--allow-testing` — seed 000's "reset left in a production build".
  static var isTestingOnly: Bool { get }
  /// What the server needs to know before running it (``MethodTraits``): whether it changes an account, takes an
  /// idempotency key, syncs, which accounts it acts on and where a hosted node serves it.
  static var traits: MethodTraits { get }
  /// Decodes the typed fields from the params object; errors name the method and the param's path.
  init(from params: Params) throws(ResponseError)
}

extension RequestType {
  public static var positionalParams: [String] { [] }
  public static var acceptsUnknownParams: Bool { false }
  public static var isTestingOnly: Bool { false }
  public static var traits: MethodTraits { MethodTraits() }
}

/// A request a client sends from its typed value (`tipsd`'s commands, the tests): the params it encodes to. Its
/// reply's result reads back as ``RequestType/Response``.
public protocol EncodableRequest: RequestType {
  /// The params to send; nil sends none.
  var encodedParams: JSONValue? { get }
}

/// A notification a client sends (no reply): `initialized`, `exit`, `$/cancelRequest`.
public protocol ClientNotificationType: Sendable {
  static var method: String { get }
  static var params: [ParamSpec] { get }
}

/// A notification the daemon sends to a subscriber: `tips/shouldDisplayChanged`, `groups/currentTipChanged`,
/// `tips/actionPerformed`. Built complete by the server's subscription registry; `seq` is stamped when the
/// notification is handed to the transport (notifications waiting behind back-pressure may be coalesced, and
/// `seq` numbers what the client actually receives, with no gaps).
public protocol ServerNotificationType: Sendable {
  static var method: String { get }
  /// The params object's members, for the registry's comparison with `protocol/openrpc.json`.
  static var paramsShape: ObjectShape { get }
  /// The subscription it is sent for.
  var subscription: String { get }
  /// Position in the subscription's stream, from 1.
  var seq: Int64 { get set }
  /// Writes the params object.
  func writeParams(to writer: inout JSONWriter)
}

extension ServerNotificationType {
  /// Opens the params object with the members every subscription notification starts with: `subscription`, `seq`.
  public func writeSubscriptionMembers(to writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("subscription")
    writer.writeString(subscription)
    writer.key("seq")
    writer.writeInt(seq)
  }

  /// The whole notification message, encoded.
  public func encoded() -> [UInt8] {
    var writer = JSONWriter(reservingCapacity: 256)
    writer.beginObject()
    writer.key("jsonrpc")
    writer.writeString("2.0")
    writer.key("method")
    writer.writeString(Self.method)
    writer.key("params")
    writeParams(to: &writer)
    writer.endObject()
    return writer.bytes
  }
}

/// A result that is always `null`.
public struct NullResult: ResultValue, Equatable {
  public init() {}
  public static let shape = ResultShape.null
  public func write(to writer: inout JSONWriter) { writer.writeNull() }
  public init(json: JSONValue) throws(ResultDecodingError) {
    guard json.isNull else { throw ResultDecodingError("result must be null (got \(json.typeName))") }
  }
}
