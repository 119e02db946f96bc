/// A framing violation. Every framing error is fatal for the connection:
/// once `Framer` reports one it stops producing messages.
public enum FramingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The first non-whitespace byte is neither `{`/`[` (newline framing) nor
  /// `C`/`c` (Content-Length framing).
  case unrecognizedFraming(firstByte: UInt8)
  /// A message exceeds the size limit; `size` is the declared length when a
  /// Content-Length header announced it, `nil` when a line grew too long (or
  /// the declared length does not even fit in an `Int`).
  case messageTooLarge(limit: Int, size: Int?)
  /// A header line is malformed (it has no `:` or an empty name).
  case invalidHeader(String)
  /// The header section ended without a `Content-Length` header.
  case missingContentLength
  /// More than one `Content-Length` header was sent for one message.
  case duplicateContentLength
  /// The `Content-Length` value is not a non-negative decimal integer.
  case invalidContentLength(String)
  /// The header section grew beyond the limit without ending.
  case headerTooLarge(limit: Int)

  /// A one-line explanation suitable for a log or an error reply.
  public var description: String {
    switch self {
    case .unrecognizedFraming(let byte):
      let hex = String(byte, radix: 16, uppercase: true)
      return "unrecognized framing: first byte 0x\(byte < 0x10 ? "0" : "")\(hex) is neither "
        + "'{' or '[' (newline-delimited JSON) nor 'C' (Content-Length headers)"
    case .messageTooLarge(let limit, let size?):
      return "message of \(size) bytes exceeds the limit of \(limit) bytes"
    case .messageTooLarge(let limit, nil):
      return "message exceeds the limit of \(limit) bytes"
    case .invalidHeader(let line):
      return "invalid header line \"\(line)\""
    case .missingContentLength:
      return "missing Content-Length header"
    case .duplicateContentLength:
      return "duplicate Content-Length header"
    case .invalidContentLength(let value):
      return "invalid Content-Length \"\(value)\": expected a non-negative integer"
    case .headerTooLarge(let limit):
      return "header section exceeds \(limit) bytes"
    }
  }
}
