#if canImport(Glibc)
  import Glibc
#endif

/// Splits a connection's byte stream into messages.
///
/// The framing is detected from the first non-whitespace byte: `{` or `[`
/// selects newline-delimited JSON, `C` or `c` selects Content-Length headers,
/// anything else is `FramingError.unrecognizedFraming`.
///
/// Usage is push/pull: `feed(_:)` appends received bytes, then `next()` is
/// called until it returns `nil`. Bytes are consumed through a read index
/// (compacted occasionally), and newline/header searches resume where they
/// stopped, so input arriving in tiny chunks is scanned only once.
///
/// **Errors are terminal.** After `next()` returns `.error`, the framer
/// drops its buffer, ignores further input and `next()` returns `nil`
/// forever; the connection is expected to be closed.
///
/// Newline framing: a message ends at `\n`, a trailing `\r` is stripped and
/// blank (whitespace-only) lines are skipped. A line that grows beyond
/// `maxMessageSize` is reported as soon as the limit is crossed, without
/// waiting for its end.
///
/// Content-Length framing: header lines end in `\r\n` (a bare `\n` is
/// tolerated); names are case-insensitive and headers other than
/// `Content-Length` are ignored. Blank lines between messages are skipped.
/// The header section of one message is limited to `maxHeaderSize` bytes,
/// and a declared length above `maxMessageSize` is reported as soon as its
/// header line arrives, before any of the body.
public struct Framer: Sendable {
  /// The largest header section (all header lines of one message).
  public static let maxHeaderSize = 8 * 1024

  /// The largest message payload accepted.
  public let maxMessageSize: Int

  /// The detected framing, `nil` until the first non-whitespace byte.
  public private(set) var framing: Framing?

  /// The error that stopped the framer, if any.
  public private(set) var failure: FramingError?

  /// Received bytes; those before `readIndex` are consumed.
  private var buffer: [UInt8] = []
  /// First unconsumed byte.
  private var readIndex = 0
  /// Where the next newline search resumes (`>= readIndex`).
  private var scanIndex = 0
  /// Parsing state.
  private var state = State.detecting

  private enum State: Sendable {
    /// Waiting for the first non-whitespace byte.
    case detecting
    /// Newline framing.
    case lines
    /// Reading the header section of a Content-Length message.
    case headers(HeaderProgress)
    /// Waiting for `length` payload bytes.
    case body(length: Int)
    /// Stopped after an error.
    case failed
  }

  /// What has been seen of the current header section.
  private struct HeaderProgress: Sendable {
    var contentLength: Int?
    var byteCount = 0
    var hasHeaderLine = false
  }

  /// Creates a framer accepting messages of up to `maxMessageSize` bytes.
  public init(maxMessageSize: Int = 1 << 20) {
    self.maxMessageSize = maxMessageSize
  }

  /// The number of received bytes not yet returned as (part of) a message.
  public var bufferedByteCount: Int {
    buffer.count - readIndex
  }

  /// Whether part of a message has arrived but not all of it — the basis
  /// for a partial-message timeout. Meaningful once `next()` returned `nil`.
  public var hasPartialMessage: Bool {
    switch state {
    case .failed: return false
    case .detecting, .lines: return bufferedByteCount > 0
    case .headers(let progress): return progress.hasHeaderLine || bufferedByteCount > 0
    case .body: return true
    }
  }

  // MARK: Input

  /// Appends received bytes. Ignored once the framer has failed.
  public mutating func feed(_ bytes: UnsafeRawBufferPointer) {
    guard failure == nil else { return }
    compact()
    buffer.append(contentsOf: bytes)
  }

  /// Appends received bytes. Ignored once the framer has failed.
  public mutating func feed(_ bytes: some Sequence<UInt8>) {
    guard failure == nil else { return }
    compact()
    buffer.append(contentsOf: bytes)
  }

  /// Drops consumed bytes when they are all of the buffer, or when they
  /// are at least half of it and worth moving.
  private mutating func compact() {
    guard readIndex > 0 else { return }
    if readIndex == buffer.count {
      buffer.removeAll(keepingCapacity: true)
    } else if readIndex >= 4096 && readIndex * 2 >= buffer.count {
      buffer.removeSubrange(0..<readIndex)
    } else {
      return
    }
    scanIndex -= readIndex
    readIndex = 0
  }

  // MARK: Output

  /// Returns the next complete message, a terminal error, or `nil` when
  /// more input is needed (or the framer has failed).
  public mutating func next() -> FramerEvent? {
    while true {
      switch state {
      case .failed:
        return nil
      case .detecting:
        if let framing = detectFraming() {
          self.framing = framing
          state = framing == .newline ? .lines : .headers(HeaderProgress())
        } else if readIndex < buffer.count {
          return fail(.unrecognizedFraming(firstByte: buffer[readIndex]))
        } else {
          return nil
        }
      case .lines:
        return nextLine()
      case .headers(var progress):
        switch readHeaders(&progress) {
        case .needMore:
          state = .headers(progress)
          return nil
        case .failed(let error):
          return fail(error)
        case .complete(let length):
          state = .body(length: length)
        }
      case .body(let length):
        guard bufferedByteCount >= length else { return nil }
        let message = Array(buffer[readIndex..<readIndex + length])
        readIndex += length
        scanIndex = readIndex
        state = .headers(HeaderProgress())
        return .message(message)
      }
    }
  }

  /// Enters the terminal state and returns the error event.
  private mutating func fail(_ error: FramingError) -> FramerEvent {
    failure = error
    state = .failed
    buffer = []
    readIndex = 0
    scanIndex = 0
    return .error(error)
  }

  /// Skips leading whitespace and picks the framing from the first other
  /// byte; `nil` when more input is needed or the byte is unrecognized.
  private mutating func detectFraming() -> Framing? {
    while readIndex < buffer.count && Self.isWhitespace(buffer[readIndex]) { readIndex += 1 }
    scanIndex = readIndex
    guard readIndex < buffer.count else { return nil }
    switch buffer[readIndex] {
    case UInt8(ascii: "{"), UInt8(ascii: "["): return .newline
    case UInt8(ascii: "C"), UInt8(ascii: "c"): return .contentLength
    default: return nil
    }
  }

  /// The position of the next `\n` at or after `scanIndex`; on a miss,
  /// `scanIndex` moves to the end so the bytes are not searched again.
  private mutating func findNewline() -> Int? {
    let start = scanIndex
    let found: Int? = buffer.withUnsafeBufferPointer { bytes in
      guard start < bytes.count, let base = bytes.baseAddress,
        let hit = memchr(base + start, 0x0A, bytes.count - start)
      else { return nil }
      return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
    }
    if found == nil { scanIndex = buffer.count }
    return found
  }

  // MARK: Newline framing

  /// What ``nextInPlace()`` found.
  public enum InPlaceEvent: Sendable, Equatable {
    /// A newline-framed message: a range of the framer's buffer, read with ``withBytes(of:_:)`` before anything is
    /// fed again.
    case range(Range<Int>)
    /// Anything else, as ``next()`` gives it (a Content-Length message, an error).
    case event(FramerEvent)
  }

  /// ``next()`` without copying a newline-framed message out of the buffer: the same messages and errors, in the same
  /// order.
  public mutating func nextInPlace() -> InPlaceEvent? {
    if case .lines = state { return nextLineRange() }
    return next().map { .event($0) }
  }

  /// The bytes of a range ``nextInPlace()`` gave, valid during `body`.
  public func withBytes<R>(of range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[range])) }
  }

  private mutating func nextLine() -> FramerEvent? {
    switch nextLineRange() {
    case .range(let range)?: return .message(Array(buffer[range]))
    case .event(let event)?: return event
    case nil: return nil
    }
  }

  private mutating func nextLineRange() -> InPlaceEvent? {
    while true {
      guard let newline = findNewline() else {
        let pending = bufferedByteCount
        // One byte of slack for a `\r` that will be stripped.
        let mayStillFit = pending == maxMessageSize + 1 && buffer[buffer.count - 1] == 0x0D
        if pending > maxMessageSize && !mayStillFit {
          return .event(fail(.messageTooLarge(limit: maxMessageSize, size: nil)))
        }
        return nil
      }
      let start = readIndex
      var end = newline
      if end > start && buffer[end - 1] == 0x0D { end -= 1 }
      readIndex = newline + 1
      scanIndex = readIndex
      // The size check comes first so that an over-long blank line fails the same way whether it arrives in
      // one read or in pieces (where the limit is crossed before its newline is seen).
      if end - start > maxMessageSize {
        return .event(fail(.messageTooLarge(limit: maxMessageSize, size: end - start)))
      }
      if buffer[start..<end].allSatisfy(Self.isWhitespace) { continue }
      return .range(start..<end)
    }
  }

  // MARK: Content-Length framing

  private enum HeaderOutcome {
    case needMore
    case complete(length: Int)
    case failed(FramingError)
  }

  /// Consumes header lines until the blank line that ends the section.
  private mutating func readHeaders(_ progress: inout HeaderProgress) -> HeaderOutcome {
    while true {
      guard let newline = findNewline() else {
        if progress.byteCount + bufferedByteCount > Self.maxHeaderSize {
          return .failed(.headerTooLarge(limit: Self.maxHeaderSize))
        }
        return .needMore
      }
      let start = readIndex
      var end = newline
      if end > start && buffer[end - 1] == 0x0D { end -= 1 }
      progress.byteCount += newline + 1 - start
      readIndex = newline + 1
      scanIndex = readIndex
      if progress.byteCount > Self.maxHeaderSize {
        return .failed(.headerTooLarge(limit: Self.maxHeaderSize))
      }

      if start == end {
        guard progress.hasHeaderLine else {
          progress.byteCount = 0  // a blank line between messages
          continue
        }
        guard let length = progress.contentLength else { return .failed(.missingContentLength) }
        return .complete(length: length)
      }
      progress.hasHeaderLine = true
      if let error = parseHeaderLine(buffer[start..<end], into: &progress) {
        return .failed(error)
      }
    }
  }

  /// Interprets one header line; only `Content-Length` is acted upon.
  private func parseHeaderLine(
    _ line: ArraySlice<UInt8>, into progress: inout HeaderProgress
  ) -> FramingError? {
    guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
      return .invalidHeader(Self.text(line))
    }
    let name = Self.trimmed(line[line.startIndex..<colon])
    guard !name.isEmpty else { return .invalidHeader(Self.text(line)) }
    guard Self.equalsIgnoringCase(name, "content-length") else { return nil }
    guard progress.contentLength == nil else { return .duplicateContentLength }

    let value = Self.trimmed(line[(colon + 1)...])
    guard !value.isEmpty, value.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else {
      return .invalidContentLength(Self.text(value))
    }
    var length = 0
    for digit in value {
      let (times10, overflow1) = length.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times10.addingReportingOverflow(Int(digit &- UInt8(ascii: "0")))
      if overflow1 || overflow2 { return .messageTooLarge(limit: maxMessageSize, size: nil) }
      length = sum
    }
    if length > maxMessageSize { return .messageTooLarge(limit: maxMessageSize, size: length) }
    progress.contentLength = length
    return nil
  }

  // MARK: Encoding

  /// Frames an outgoing payload: `payload + "\n"` for newline framing, or a
  /// `Content-Length: N\r\n\r\n` header followed by the payload.
  public static func encode(_ payload: [UInt8], as framing: Framing) -> [UInt8] {
    switch framing {
    case .newline:
      var framed = payload
      framed.append(0x0A)
      return framed
    case .contentLength:
      var framed = Array("Content-Length: \(payload.count)\r\n\r\n".utf8)
      framed.reserveCapacity(framed.count + payload.count)
      framed.append(contentsOf: payload)
      return framed
    }
  }

  /// Appends an outgoing payload, framed as ``encode(_:as:)`` frames it, to `buffer` (several messages gathered
  /// into one write).
  public static func append(_ payload: [UInt8], as framing: Framing, to buffer: inout [UInt8]) {
    switch framing {
    case .newline:
      buffer.append(contentsOf: payload)
      buffer.append(0x0A)
    case .contentLength:
      buffer.append(contentsOf: "Content-Length: \(payload.count)\r\n\r\n".utf8)
      buffer.append(contentsOf: payload)
    }
  }

  // MARK: Byte helpers

  private static func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
  }

  private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    var slice = bytes
    while let first = slice.first, first == 0x20 || first == 0x09 { slice.removeFirst() }
    while let last = slice.last, last == 0x20 || last == 0x09 { slice.removeLast() }
    return slice
  }

  private static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
    guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
    for (k, byte) in bytes.enumerated() {
      let folded = (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
      if folded != lowercase.utf8Start[k] { return false }
    }
    return true
  }

  /// Header bytes as text for an error message, shortened to 100 bytes.
  private static func text(_ bytes: ArraySlice<UInt8>) -> String {
    String(decoding: bytes.prefix(100), as: UTF8.self)
  }
}
