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
  /// the byte `offset`.
  public static func decode(_ buffer: UnsafeRawBufferPointer) -> IncomingPayload {
    do throws(JSONParseError) {
      return decode(try JSONParser.parse(buffer))
    } catch {
      return parseFailure(error)
    }
  }

  /// Parses and classifies a message.
  public static func decode(_ bytes: some Collection<UInt8>) -> IncomingPayload {
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
