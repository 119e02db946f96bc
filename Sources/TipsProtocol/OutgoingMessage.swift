public import TipsJSON

/// Encoders for messages the server sends, written straight to bytes with
/// `JSONWriter` in the field order `{"jsonrpc":"2.0","id":…,"result":…}`.
public enum OutgoingMessage {
  /// A success reply.
  public static func encodeResult(id: RequestID?, result: JSONValue) -> [UInt8] {
    encodeResult(id: id) { $0.write(result) }
  }

  /// A success reply whose result is written by `writeResult`, which must
  /// write exactly one JSON value.
  public static func encodeResult<E: Error>(
    id: RequestID?, writeResult: (inout JSONWriter) throws(E) -> Void
  ) throws(E) -> [UInt8] {
    var writer = header(id: id)
    writer.key(literal: "result")
    try writeResult(&writer)
    writer.endObject()
    return writer.bytes
  }

  /// ``encodeResult(id:writeResult:)`` appended to `writer` (a new top-level value), not returned in an array of its
  /// own.
  public static func writeResult<E: Error>(
    id: RequestID?, to writer: inout JSONWriter, writeResult: (inout JSONWriter) throws(E) -> Void
  ) throws(E) {
    writer.beginNextDocument()
    writer.beginObject(literalMembersThenKey: #""jsonrpc":"2.0","id":"#)
    id.write(to: &writer)
    writer.key(literal: "result")
    try writeResult(&writer)
    writer.endObject()
  }

  /// An error reply; `id` is `nil` for `"id": null`.
  public static func encodeError(id: RequestID?, error: ResponseError) -> [UInt8] {
    var writer = header(id: id)
    writer.key(literal: "error")
    error.write(to: &writer)
    writer.endObject()
    return writer.bytes
  }

  /// Joins encoded messages into a batch array. A batch whose messages
  /// were all notifications has no replies; send nothing rather than `[]`.
  public static func encodeBatch(_ messages: [[UInt8]]) -> [UInt8] {
    var writer = JSONWriter(reservingCapacity: messages.reduce(2) { $0 + $1.count + 1 })
    writer.beginArray()
    for message in messages { writer.writeRaw(message) }
    writer.endArray()
    return writer.bytes
  }

  /// `{"jsonrpc":"2.0","id":…` with the object left open.
  private static func header(id: RequestID?) -> JSONWriter {
    var writer = JSONWriter()
    writer.beginObject(literalMembersThenKey: #""jsonrpc":"2.0","id":"#)
    id.write(to: &writer)
    return writer
  }
}
