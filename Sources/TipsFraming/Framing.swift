/// How messages are delimited on a connection.
public enum Framing: Sendable, Hashable {
  /// One JSON text per line, terminated by `\n` (an optional `\r` before it
  /// is stripped).
  case newline
  /// LSP-style: `Content-Length: N` and other headers, each line ending in
  /// `\r\n`, an empty line, then exactly N bytes of payload.
  case contentLength
}
