/// How an LSP `Position` counts characters within a line (LSP 3.17 `PositionEncodingKind`). UTF-16 code units
/// unless the client offers another in `general.positionEncodings`.
public enum PositionEncoding: String, Sendable, Hashable, CaseIterable {
  case utf8 = "utf-8"
  case utf16 = "utf-16"
  case utf32 = "utf-32"

  /// The units a scalar of `length` UTF-8 bytes takes.
  func units(forUTF8Length length: Int) -> Int {
    switch self {
    case .utf8: length
    case .utf16: length == 4 ? 2 : 1
    case .utf32: 1
    }
  }
}

/// A zero-based line and character offset (LSP `Position`), the character counted in the document's encoding.
public struct LSPPosition: Sendable, Hashable, CustomStringConvertible {
  public var line: Int
  public var character: Int

  public init(line: Int, character: Int) {
    self.line = line
    self.character = character
  }

  public var description: String { "\(line):\(character)" }
}

/// A half-open range of positions (LSP `Range`).
public struct LSPRange: Sendable, Hashable, CustomStringConvertible {
  public var start: LSPPosition
  public var end: LSPPosition

  public init(start: LSPPosition, end: LSPPosition) {
    self.start = start
    self.end = end
  }

  public var description: String { "\(start)-\(end)" }
}

/// An open document: its text as UTF-8 bytes (what the lint and the JSON scanner read) and where its lines start, so
/// that positions convert both ways — LSP positions (zero-based, in UTF-16 code units by default), byte offsets, and
/// the lint's 1-based line and column (lines end at LF only, columns count Unicode scalars).
///
/// Lines end at `\n`, `\r\n` or a lone `\r` (LSP 3.17); a `\r\n` is one line break. A character past the end of its
/// line means the line's end, a line past the last means the end of the document, and a character inside a
/// surrogate pair (or inside a multi-byte scalar in UTF-8) means the start of that scalar.
public struct TextDocument: Sendable {
  public let uri: String
  public var version: Int
  public private(set) var bytes: [UInt8]
  /// Byte offsets at which LSP lines start.
  public private(set) var lineStarts: [Int] = [0]
  /// Byte offsets at which the lint's lines start (after each LF).
  private var lintLineStarts: [Int] = [0]

  public init(uri: String, version: Int, text: [UInt8]) {
    self.uri = uri
    self.version = version
    self.bytes = text
    indexLines()
  }

  public init(uri: String, version: Int, text: String) {
    self.init(uri: uri, version: version, text: Array(text.utf8))
  }

  public var text: String { String(decoding: bytes, as: UTF8.self) }

  private mutating func indexLines() {
    var starts = [0]
    var lintStarts = [0]
    var index = 0
    let count = bytes.count
    while index < count {
      let byte = bytes[index]
      if byte == 0x0A {
        starts.append(index + 1)
        lintStarts.append(index + 1)
      } else if byte == 0x0D {
        if index + 1 < count, bytes[index + 1] == 0x0A {
          index += 1
          lintStarts.append(index + 1)
        }
        starts.append(index + 1)
      }
      index += 1
    }
    lineStarts = starts
    lintLineStarts = lintStarts
  }

  // MARK: Edits

  /// Replaces the whole text (a `didChange` without a range).
  public mutating func replaceAll(with text: [UInt8]) {
    bytes = text
    indexLines()
  }

  /// Replaces `range` (an incremental `didChange`); the range is read in `encoding`.
  public mutating func replace(_ range: LSPRange, with text: [UInt8], encoding: PositionEncoding) {
    var start = offset(of: range.start, encoding: encoding)
    var end = offset(of: range.end, encoding: encoding)
    if end < start { swap(&start, &end) }
    bytes.replaceSubrange(start..<end, with: text)
    indexLines()
  }

  // MARK: Positions

  /// Where line `line`'s text ends (before its line break).
  public func contentEnd(ofLine line: Int) -> Int {
    guard line + 1 < lineStarts.count else { return bytes.count }
    let next = lineStarts[line + 1]
    if next >= 2, bytes[next - 2] == 0x0D, bytes[next - 1] == 0x0A { return next - 2 }
    return next - 1
  }

  /// The UTF-8 length of the scalar whose first byte is `byte`.
  static func scalarLength(_ byte: UInt8) -> Int {
    switch byte {
    case ..<0x80: 1
    case ..<0xE0: 2
    case ..<0xF0: 3
    default: 4
    }
  }

  static func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }

  /// The byte offset of an LSP position.
  public func offset(of position: LSPPosition, encoding: PositionEncoding) -> Int {
    guard position.line >= 0 else { return 0 }
    guard position.line < lineStarts.count else { return bytes.count }
    let end = contentEnd(ofLine: position.line)
    var index = lineStarts[position.line]
    var units = 0
    while index < end, units < position.character {
      let length = Self.scalarLength(bytes[index])
      let width = encoding.units(forUTF8Length: length)
      if units + width > position.character { break }  // inside a surrogate pair: the scalar's start
      units += width
      index += length
    }
    return min(index, end)
  }

  /// The line holding byte `offset`.
  public func line(ofOffset offset: Int) -> Int {
    var low = 0
    var high = lineStarts.count - 1
    while low < high {
      let middle = (low + high + 1) / 2
      if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
    }
    return low
  }

  /// The LSP position of a byte offset (clamped to the document; an offset inside a line break or a scalar reads as
  /// the line's end or the scalar's start).
  public func position(ofOffset offset: Int, encoding: PositionEncoding) -> LSPPosition {
    var target = max(0, min(offset, bytes.count))
    let line = line(ofOffset: target)
    let start = lineStarts[line]
    target = min(target, contentEnd(ofLine: line))
    while target > start, target < bytes.count, Self.isContinuation(bytes[target]) { target -= 1 }
    var units = 0
    var index = start
    while index < target {
      let length = Self.scalarLength(bytes[index])
      units += encoding.units(forUTF8Length: length)
      index += length
    }
    return LSPPosition(line: line, character: units)
  }

  /// The LSP range of the bytes `start..<end`.
  public func range(_ start: Int, _ end: Int, encoding: PositionEncoding) -> LSPRange {
    LSPRange(start: position(ofOffset: start, encoding: encoding), end: position(ofOffset: end, encoding: encoding))
  }

  /// The byte offset of the lint's 1-based `line` and `column` (``TipsCatalog/Diagnostic``: lines end at LF only,
  /// the column counts Unicode scalars). Past the end of a line reads as its end.
  public func offset(lintLine line: Int, column: Int) -> Int {
    guard line >= 1 else { return 0 }
    guard line <= lintLineStarts.count else { return bytes.count }
    var index = lintLineStarts[line - 1]
    var remaining = column - 1
    while remaining > 0, index < bytes.count, bytes[index] != 0x0A {
      index += Self.scalarLength(bytes[index])
      remaining -= 1
    }
    return min(index, bytes.count)
  }
}
