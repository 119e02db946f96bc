/// The receiver's answer, as far as delivery reads it: the status line of an HTTP/1.x response, parsed as bytes
/// arrive. The headers are skipped up to the blank line (at most ``limit`` bytes in all); the body is never read.
/// Fuzzed (`Fuzz/harness/WebhookResponseHarness.swift`): no input crashes it or makes it answer twice.
public struct HTTPResponseHead: Sendable {
  public enum State: Sendable, Equatable {
    /// More bytes are needed.
    case partial
    /// The status line and headers are complete: the status code.
    case complete(status: Int)
    /// Not an HTTP/1.x response (or too long): why.
    case malformed(String)
  }

  /// The most bytes of status line and headers read before the answer is malformed.
  public static let limit = 16_384

  private var buffer: [UInt8] = []
  public private(set) var state = State.partial

  public init() {}

  /// Takes the next bytes; answers the state (once complete or malformed, later bytes change nothing).
  @discardableResult
  public mutating func consume(_ bytes: some Collection<UInt8>) -> State {
    guard state == .partial else { return state }
    let scanFrom = max(0, buffer.count - 3)
    buffer.append(contentsOf: bytes.prefix(Self.limit + 4 - buffer.count))
    guard let end = Self.blankLine(in: buffer, from: scanFrom) else {
      // Full: a blank line found later would end past the limit.
      if buffer.count >= Self.limit + 4 {
        state = .malformed("the response's head is longer than \(Self.limit) bytes")
      }
      return state
    }
    guard end <= Self.limit else {
      state = .malformed("the response's head is longer than \(Self.limit) bytes")
      return state
    }
    state = Self.statusLine(buffer[..<end])
    return state
  }

  /// The end of the first `\r\n\r\n` (or `\n\n`) at or after `from`.
  private static func blankLine(in bytes: [UInt8], from: Int) -> Int? {
    var index = from
    while index < bytes.count {
      if bytes[index] == 10 {
        if index + 1 < bytes.count, bytes[index + 1] == 10 { return index }
        if index + 2 < bytes.count, bytes[index + 1] == 13, bytes[index + 2] == 10 { return index }
      }
      index += 1
    }
    return nil
  }

  /// `HTTP/1.x NNN reason`.
  private static func statusLine(_ head: ArraySlice<UInt8>) -> State {
    let line = head.prefix { $0 != 13 && $0 != 10 }
    let prefix = Array("HTTP/1.".utf8)
    guard line.count >= 12, Array(line.prefix(7)) == prefix else {
      return .malformed("the response does not start with an HTTP/1.x status line")
    }
    let start = line.startIndex
    guard line[start + 7] == 48 || line[start + 7] == 49, line[start + 8] == 32 else {
      return .malformed("the response's HTTP version is not 1.0 or 1.1")
    }
    let digits = line[(start + 9)..<(start + 12)]
    guard digits.allSatisfy({ (48...57).contains($0) }), line.count == 12 || line[start + 12] == 32 else {
      return .malformed("the response's status code is not three digits")
    }
    let status = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
    guard (100...599).contains(status) else { return .malformed("the response's status code \(status) is unknown") }
    return .complete(status: status)
  }
}
