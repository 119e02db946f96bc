public import TipsJSON

/// The plain shape of a request or notification, read straight from the bytes without building the message's
/// `JSONValue` tree: an object with no members but `jsonrpc` (exactly `"2.0"`), `id` (a plain string, an integer of
/// at most 18 digits, or `null`), `method` (a plain string) and `params` (`null`, or an object whose values are plain
/// scalars or flat objects of them — `events/donate`'s `id` and `info`), in any order, each at most once. "Plain" is
/// ``PlainScanner``'s: printable ASCII without escapes, no fractions or exponents.
///
/// Anything else — an escape in the id, an extra member, a repeated key, a batch, a syntax error — is not read here
/// (nil) and goes to ``JSONParser`` and ``IncomingMessage/init(_:)``, which produce the message or the error; for
/// what it accepts, ``scan(_:)`` produces exactly the message they would.
public enum PlainRequest {
  /// What ``scan(_:)`` reads, before it is made an ``IncomingMessage`` (a request when `hasID`, else a
  /// notification): the dispatcher's hot path takes the request from here, with no message enum to build, copy and
  /// destroy.
  public struct Parts {
    public var hasID: Bool
    public var id: RequestID?
    public var method: String
    public var params: JSONValue?
  }

  public static func scan(_ buffer: UnsafeRawBufferPointer) -> IncomingMessage? {
    guard let parts = scanParts(buffer) else { return nil }
    return parts.hasID
      ? .request(id: parts.id, method: parts.method, params: parts.params)
      : .notification(method: parts.method, params: parts.params)
  }

  /// ``scan(_:)``'s reading, as its parts.
  public static func scanParts(_ buffer: UnsafeRawBufferPointer) -> Parts? {
    var scanner = PlainScanner(buffer.assumingMemoryBound(to: UInt8.self))
    guard scanner.consume(UInt8(ascii: "{")) else { return nil }
    var sawVersion = false
    var hasID = false
    var id: RequestID?
    var method: String?
    var sawParams = false
    var params: JSONValue?
    repeat {
      guard let key = scanner.plainString(), scanner.consume(UInt8(ascii: ":")) else { return nil }
      switch Member(key, in: scanner) {
      case .jsonrpc?:
        guard !sawVersion, let version = scanner.plainString(), scanner.matches(version, "2.0") else { return nil }
        sawVersion = true
      case .id?:
        guard !hasID else { return nil }
        hasID = true
        switch scanner.peek() {
        case UInt8(ascii: "\"")?:
          guard let text = scanner.plainStringValue() else { return nil }
          id = .string(text)
        case UInt8(ascii: "n")?:
          guard scanner.consumeLiteral("null") else { return nil }
        default:
          guard let number = scanner.plainInteger() else { return nil }
          id = .int(number)
        }
      case .method?:
        guard method == nil, let name = scanner.plainStringValue() else { return nil }
        method = name
      case .params?:
        guard !sawParams else { return nil }
        sawParams = true
        if scanner.peek() == UInt8(ascii: "n") {
          guard scanner.consumeLiteral("null") else { return nil }
        } else {
          guard let object = scanner.plainObject(nested: 1) else { return nil }
          params = .object(object)
        }
      case nil:
        return nil
      }
    } while scanner.consume(UInt8(ascii: ","))
    guard scanner.consume(UInt8(ascii: "}")), scanner.atEnd(), sawVersion, let method else { return nil }
    return Parts(hasID: hasID, id: id, method: method, params: params)
  }

  /// The members of the plain shape.
  private enum Member {
    case jsonrpc, id, method, params

    /// The member a key names, if any.
    @inline(__always)
    init?(_ key: Range<Int>, in scanner: PlainScanner) {
      switch key.count {
      case 2 where scanner.matches(key, "id"): self = .id
      case 6 where scanner.bytes[key.lowerBound] == UInt8(ascii: "m") && scanner.matches(key, "method"): self = .method
      case 6 where scanner.matches(key, "params"): self = .params
      case 7 where scanner.matches(key, "jsonrpc"): self = .jsonrpc
      default: return nil
      }
    }
  }
}
