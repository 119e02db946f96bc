public import TipsJSON

/// One framed message from a client: a single JSON-RPC message or a batch.
public enum IncomingPayload: Sendable, Equatable {
  /// A single message (including a parse error, as `.invalid`).
  case single(IncomingMessage)
  /// A non-empty batch; every element is classified independently (a
  /// non-object element becomes `.invalid`).
  case batch([IncomingMessage])
  /// `[]`: answered with a single -32600 reply with id `null` (``ResponseError/emptyBatch()``).
  case emptyBatch

  /// Parses and classifies a message. Invalid JSON yields
  /// `.single(.invalid(id: nil, error: .parseError(…)))` whose `data` holds
  /// the byte `offset`. A request of the plain shape (``PlainRequest``) is read straight from the bytes; anything
  /// else is parsed in full (``decodeParsingFully(_:)``), with the same outcome either way.
  public static func decode(_ buffer: UnsafeRawBufferPointer) -> IncomingPayload {
    if let message = PlainRequest.scan(buffer) { return .single(message) }
    return decodeParsingFully(buffer)
  }

  /// Parses and classifies a message.
  public static func decode(_ bytes: some Collection<UInt8>) -> IncomingPayload {
    let plain = bytes.withContiguousStorageIfAvailable { PlainRequest.scan(UnsafeRawBufferPointer($0)) }
    if let message = plain ?? nil { return .single(message) }
    return decodeParsingFully(bytes)
  }

  /// Parses the whole message into a `JSONValue`, then classifies it (the path for everything but the plain shape).
  public static func decodeParsingFully(_ buffer: UnsafeRawBufferPointer) -> IncomingPayload {
    do throws(JSONParseError) {
      return decode(try JSONParser.parse(buffer))
    } catch {
      return parseFailure(error)
    }
  }

  /// Parses the whole message into a `JSONValue`, then classifies it.
  public static func decodeParsingFully(_ bytes: some Collection<UInt8>) -> IncomingPayload {
    do throws(JSONParseError) {
      return decode(try JSONParser.parse(bytes))
    } catch {
      return parseFailure(error)
    }
  }

  /// Classifies an already parsed message.
  public static func decode(_ value: JSONValue) -> IncomingPayload {
    guard case .array(let elements) = value else { return .single(IncomingMessage(value)) }
    if elements.isEmpty { return .emptyBatch }
    return .batch(elements.map(IncomingMessage.init))
  }

  private static func parseFailure(_ error: JSONParseError) -> IncomingPayload {
    .single(
      .invalid(
        id: nil,
        error: .parseError(error.description, offset: error.offset)
      ))
  }
}
