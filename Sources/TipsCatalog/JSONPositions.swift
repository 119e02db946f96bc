import TipsJSON

/// A line and column in a text file: both 1-based; the column counts Unicode scalars (not bytes), as editors do.
public struct SourcePosition: Sendable, Hashable {
  public var line: Int
  public var column: Int

  public init(line: Int, column: Int) {
    self.line = line
    self.column = column
  }
}

/// Where each value of a JSON document starts, by JSON path (`tips[2].rules[0].count`, the paths decoding errors
/// name), built by scanning the bytes once. `TipsJSON`'s parser keeps no positions; this index puts them back for
/// diagnostics.
///
/// Paths join object keys with `.` and array indexes with `[i]`, exactly as `TipsEngine`'s decoders do; the root is
/// `""` (errors spell it `$`). The scanner expects text `JSONParser` already accepted: on anything else it stops,
/// keeping what it indexed so far.
struct JSONPositions: Sendable {
  /// Byte offset of each value, by path.
  private(set) var values: [String: Int] = [:]
  /// Byte offset of each object member's key, by the member's path.
  private(set) var keys: [String: Int] = [:]
  /// Members whose key repeats an earlier key of the same object (the parser keeps the last value): the member's
  /// path and the byte offset of the repeated key.
  private(set) var duplicateKeys: [(path: String, offset: Int)] = []
  /// Byte offsets at which lines start.
  private let lineStarts: [Int]
  private let bytes: [UInt8]

  init(_ bytes: [UInt8]) {
    self.bytes = bytes
    var starts = [0]
    for (offset, byte) in bytes.enumerated() where byte == 0x0A { starts.append(offset + 1) }
    lineStarts = starts
    var scanner = Scanner(bytes: bytes)
    scanner.skipWhitespace()
    _ = scanner.value(path: "", depth: 0, into: &self)
  }

  /// The position of the value at `path` (`$` or `""` for the root), if the document has one there.
  func position(of path: String) -> SourcePosition? {
    let key = path == "$" ? "" : path
    guard let offset = values[key] else { return nil }
    return position(atOffset: offset)
  }

  /// The position of the key of the member at `path`.
  func keyPosition(of path: String) -> SourcePosition? {
    guard let offset = keys[path] else { return nil }
    return position(atOffset: offset)
  }

  /// The line and column of a byte offset (an offset past the end reads as the end).
  func position(atOffset offset: Int) -> SourcePosition {
    let clamped = max(0, min(offset, bytes.count))
    var low = 0
    var high = lineStarts.count - 1
    while low < high {
      let middle = (low + high + 1) / 2
      if lineStarts[middle] <= clamped { low = middle } else { high = middle - 1 }
    }
    let start = lineStarts[low]
    var column = 1
    var index = start
    while index < clamped {
      if bytes[index] & 0xC0 != 0x80 { column += 1 }
      index += 1
    }
    // A continuation byte at the offset itself belongs to the scalar already counted.
    if clamped < bytes.count, bytes[clamped] & 0xC0 == 0x80, column > 1 { column -= 1 }
    return SourcePosition(line: low + 1, column: column)
  }

  fileprivate mutating func record(value path: String, at offset: Int) { values[path] = offset }
  fileprivate mutating func record(key path: String, at offset: Int) { keys[path] = offset }
  fileprivate mutating func recordDuplicate(_ path: String, at offset: Int) { duplicateKeys.append((path, offset)) }

  /// A minimal scanner over accepted JSON text: it finds where values and keys start, nothing more.
  private struct Scanner {
    let bytes: [UInt8]
    var index = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func skipWhitespace() {
      while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    /// Scans the value at `index`; false when the text is not what an accepted document would hold.
    mutating func value(path: String, depth: Int, into positions: inout JSONPositions) -> Bool {
      guard index < bytes.count, depth <= 512 else { return false }
      positions.record(value: path, at: index)
      switch bytes[index] {
      case UInt8(ascii: "{"):
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
          index += 1
          return true
        }
        var seen: Set<String> = []
        while true {
          skipWhitespace()
          let keyOffset = index
          guard let key = string() else { return false }
          let memberPath = path.isEmpty ? key : "\(path).\(key)"
          if !seen.insert(key).inserted { positions.recordDuplicate(memberPath, at: keyOffset) }
          positions.record(key: memberPath, at: keyOffset)
          skipWhitespace()
          guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
          index += 1
          skipWhitespace()
          guard value(path: memberPath, depth: depth + 1, into: &positions) else { return false }
          skipWhitespace()
          guard index < bytes.count else { return false }
          if bytes[index] == UInt8(ascii: ",") {
            index += 1
            continue
          }
          guard bytes[index] == UInt8(ascii: "}") else { return false }
          index += 1
          return true
        }
      case UInt8(ascii: "["):
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
          index += 1
          return true
        }
        var element = 0
        while true {
          skipWhitespace()
          guard value(path: "\(path)[\(element)]", depth: depth + 1, into: &positions) else { return false }
          element += 1
          skipWhitespace()
          guard index < bytes.count else { return false }
          if bytes[index] == UInt8(ascii: ",") {
            index += 1
            continue
          }
          guard bytes[index] == UInt8(ascii: "]") else { return false }
          index += 1
          return true
        }
      case UInt8(ascii: "\""):
        return string() != nil
      default:
        // A number or a literal: up to the next delimiter.
        while index < bytes.count,
          ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[index])
        {
          index += 1
        }
        return true
      }
    }

    /// Scans a string literal, returning its decoded text (escapes resolved, as keys appear in paths).
    mutating func string() -> String? {
      guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
      index += 1
      var text = JSONStringText()
      while index < bytes.count {
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""):
          return text.text()
        case UInt8(ascii: "\\"):
          guard index < bytes.count else { return nil }
          let escape = bytes[index]
          index += 1
          if escape == UInt8(ascii: "u") {
            guard index + 4 <= bytes.count,
              let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
            else { return nil }
            index += 4
            text.append(unicode: code)
          } else {
            text.append(escape: escape)
          }
        default:
          text.append(byte: byte)
        }
      }
      return nil
    }
  }
}
