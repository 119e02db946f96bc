public import TipsJSON

/// One step of a JSON path: an object member or an array element.
public enum PathSegment: Sendable, Hashable {
  case key(String)
  case index(Int)
}

extension [PathSegment] {
  /// The path as `TipsCatalog` and the engine's decoders spell it: keys joined with `.`, indexes as `[i]`, `$` for the
  /// root.
  public var jsonPath: String {
    var out = ""
    for segment in self {
      switch segment {
      case .key(let key): out += out.isEmpty ? key : ".\(key)"
      case .index(let index): out += "[\(index)]"
      }
    }
    return out.isEmpty ? "$" : out
  }
}

/// A JSON document as written, with the byte range of every value and key — and tolerant of what an editor holds
/// while someone types: an unterminated string ends at its line's end, a missing comma, colon or value is skipped
/// over, unclosed objects and arrays end where the text does, and anything unexpected is stepped over one byte at a
/// time. On text `JSONParser` accepts, every value sits at the path and offset `TipsCatalog`'s position index gives
/// it, which is how lint diagnostics find the value they are about.
public struct SyntaxTree: Sendable {
  public enum Kind: Sendable, Hashable {
    case object, array, string, number, literal
  }

  public struct Member: Sendable, Hashable {
    /// The key's node (a string).
    public var key: Int
    /// The offset of the `:`, when written.
    public var colon: Int?
    /// The value's node, when written.
    public var value: Int?
  }

  public struct Node: Sendable {
    public var kind: Kind
    /// Byte offsets: `start..<end` (a string includes its quotes).
    public var start: Int
    public var end: Int
    /// Whether the closing quote, brace or bracket was written.
    public var closed = true
    /// The object or array holding this node.
    public var parent: Int?
    /// For a member's key or value: the member's name. For an array element: nil.
    public var key: String?
    /// Whether this node is a member's key (not a value).
    public var isKey = false
    /// For an array element: its index.
    public var index: Int?
    /// A string's decoded text; a number's or literal's text as written.
    public var text = ""
    /// An object's members, in order.
    public var members: [Member] = []
    /// An array's elements, in order.
    public var elements: [Int] = []

    /// Where a string's text starts and ends (inside the quotes; an unterminated string's text runs to its end).
    public var contentStart: Int { kind == .string ? start + 1 : start }
    public var contentEnd: Int { kind == .string && closed ? end - 1 : end }
  }

  public private(set) var nodes: [Node] = []
  public private(set) var root: Int?
  public let bytes: [UInt8]
  /// The node starting at each offset (values and keys never share one).
  private var starts: [Int: Int] = [:]

  /// How deeply the scanner follows nesting; deeper text is left unscanned (no catalog nests like that).
  static let maximumDepth = 256

  public init(_ bytes: [UInt8]) {
    self.bytes = bytes
    var parser = Parser(bytes: bytes)
    root = parser.value(parent: nil, depth: 0)
    nodes = parser.nodes
    for (index, node) in nodes.enumerated() where starts[node.start] == nil { starts[node.start] = index }
  }

  public subscript(index: Int) -> Node { nodes[index] }

  // MARK: Navigation

  /// The value of member `key` of object node `object`.
  public func member(_ object: Int?, _ key: String) -> Int? {
    guard let object, nodes[object].kind == .object else { return nil }
    return nodes[object].members.last { nodes[$0.key].text == key }?.value
  }

  /// The string value of member `key` of `object`.
  public func string(_ object: Int?, _ key: String) -> String? {
    guard let value = member(object, key), nodes[value].kind == .string else { return nil }
    return nodes[value].text
  }

  /// The elements of an array node.
  public func elements(_ array: Int?) -> [Int] {
    guard let array, nodes[array].kind == .array else { return [] }
    return nodes[array].elements
  }

  /// The node's path from the root (a key's path is its member's).
  public func path(of node: Int) -> [PathSegment] {
    var segments: [PathSegment] = []
    var current: Int? = node
    while let index = current, let parent = nodes[index].parent {
      if nodes[parent].kind == .array {
        segments.append(.index(nodes[index].index ?? 0))
      } else if let key = nodes[index].key {
        segments.append(.key(key))
      }
      current = parent
    }
    return segments.reversed()
  }

  /// The value node of a key node (itself otherwise).
  public func valueOfKey(_ node: Int) -> Int? {
    guard nodes[node].isKey, let parent = nodes[node].parent else { return node }
    return nodes[parent].members.first { $0.key == node }?.value
  }

  /// The innermost node whose range holds `offset`: a string or container from just after its opening to just
  /// before its closing (`"ab|"` is inside, `|"ab"` is not), a number or literal up to and including its end.
  public func node(at offset: Int) -> Int? {
    var best: Int?
    for (index, node) in nodes.enumerated() where Self.holds(node, offset) {
      if let current = best, nodes[current].start > node.start { continue }
      best = index
    }
    return best
  }

  static func holds(_ node: Node, _ offset: Int) -> Bool {
    switch node.kind {
    case .object, .array, .string:
      offset > node.start && (offset < node.end || (!node.closed && offset <= node.end))
    case .number, .literal:
      offset >= node.start && offset <= node.end
    }
  }

  /// The innermost node the character at `offset` belongs to (hover: the character under the pointer).
  public func node(under offset: Int) -> Int? {
    var best: Int?
    for (index, node) in nodes.enumerated()
    where offset >= node.start && (offset < node.end || (!node.closed && offset == node.end)) {
      if let current = best, nodes[current].start > node.start { continue }
      best = index
    }
    return best
  }

  /// The node (a value, or a key) starting at byte `offset`.
  public func node(startingAt offset: Int) -> Int? {
    starts[offset]
  }

  /// The innermost object or array holding `offset` strictly inside its brackets.
  public func container(at offset: Int) -> Int? {
    var best: Int?
    for (index, node) in nodes.enumerated() where node.kind == .object || node.kind == .array {
      guard offset > node.start, offset < node.end || (!node.closed && offset <= node.end) else { continue }
      if let current = best, nodes[current].start > node.start { continue }
      best = index
    }
    return best
  }

  /// The node's value as JSON, as far as it was written (members without a value are left out; a number that does
  /// not parse is left out).
  public func json(_ index: Int) -> JSONValue? {
    let node = nodes[index]
    switch node.kind {
    case .string: return .string(node.text)
    case .number:
      return try? JSONParser.parse(Array(node.text.utf8))
    case .literal:
      switch node.text {
      case "true": return .bool(true)
      case "false": return .bool(false)
      case "null": return .null
      default: return nil
      }
    case .array: return .array(node.elements.compactMap { json($0) })
    case .object:
      var object = JSONObject()
      for member in node.members {
        if let value = member.value, let json = json(value) { object[nodes[member.key].text] = json }
      }
      return .object(object)
    }
  }

  // MARK: - Parser

  private struct Parser {
    let bytes: [UInt8]
    var index = 0
    var nodes: [Node] = []

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func skipWhitespace() {
      while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func add(_ kind: Kind, parent: Int?) -> Int {
      nodes.append(Node(kind: kind, start: index, end: index, parent: parent))
      return nodes.count - 1
    }

    /// Scans one value at the next non-blank byte; nil (nothing consumed) when none starts there.
    mutating func value(parent: Int?, depth: Int) -> Int? {
      skipWhitespace()
      guard index < bytes.count else { return nil }
      switch bytes[index] {
      case UInt8(ascii: "{"):
        guard depth < SyntaxTree.maximumDepth else { return stop(parent) }
        return object(parent: parent, depth: depth)
      case UInt8(ascii: "["):
        guard depth < SyntaxTree.maximumDepth else { return stop(parent) }
        return array(parent: parent, depth: depth)
      case UInt8(ascii: "\""):
        return string(parent: parent)
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        return token(.number, parent: parent) {
          ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
            || [UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")]
              .contains($0)
        }
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
        return token(.literal, parent: parent) {
          ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
            || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_")
        }
      default:
        return nil
      }
    }

    /// Too deep: the rest of the text is one unscanned literal.
    mutating func stop(_ parent: Int?) -> Int {
      let node = add(.literal, parent: parent)
      index = bytes.count
      nodes[node].end = index
      nodes[node].closed = false
      return node
    }

    mutating func token(_ kind: Kind, parent: Int?, _ accepts: (UInt8) -> Bool) -> Int {
      let node = add(kind, parent: parent)
      let start = index
      while index < bytes.count, accepts(bytes[index]) { index += 1 }
      nodes[node].end = index
      nodes[node].text = String(decoding: bytes[start..<index], as: UTF8.self)
      return node
    }

    /// Steps over whitespace and commas to a container's next item; false when the container ends: at its `close`
    /// (consumed), or left open — at the end of the text or at `foreign`, the enclosing container's close.
    mutating func nextItem(of node: Int, close: UInt8, foreign: UInt8) -> Bool {
      while true {
        skipWhitespace()
        guard index < bytes.count else {
          nodes[node].closed = false
          return false
        }
        switch bytes[index] {
        case close:
          index += 1
          return false
        case foreign:
          nodes[node].closed = false
          return false
        case UInt8(ascii: ","):
          index += 1
        default:
          return true
        }
      }
    }

    mutating func object(parent: Int?, depth: Int) -> Int {
      let node = add(.object, parent: parent)
      index += 1
      while nextItem(of: node, close: UInt8(ascii: "}"), foreign: UInt8(ascii: "]")) {
        let byte = bytes[index]
        guard byte == UInt8(ascii: "\"") else {
          // Not a key: a value without one, or a stray byte. Scan it (and forget it) or step over it.
          if value(parent: node, depth: depth + 1) == nil { index += 1 }
          continue
        }
        let key = string(parent: node)
        nodes[key].isKey = true
        nodes[key].key = nodes[key].text
        var member = Member(key: key)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
          member.colon = index
          index += 1
          if let value = value(parent: node, depth: depth + 1) {
            nodes[value].key = nodes[key].text
            member.value = value
          }
        }
        nodes[node].members.append(member)
      }
      nodes[node].end = index
      return node
    }

    mutating func array(parent: Int?, depth: Int) -> Int {
      let node = add(.array, parent: parent)
      index += 1
      while nextItem(of: node, close: UInt8(ascii: "]"), foreign: UInt8(ascii: "}")) {
        if let element = value(parent: node, depth: depth + 1) {
          nodes[element].index = nodes[node].elements.count
          nodes[node].elements.append(element)
        } else {
          index += 1
        }
      }
      nodes[node].end = index
      return node
    }

    /// A string literal; unterminated, it ends before the line break (JSON strings hold no raw line breaks).
    mutating func string(parent: Int?) -> Int {
      let node = add(.string, parent: parent)
      index += 1
      var text = JSONStringText()
      var closed = false
      scan: while index < bytes.count {
        let byte = bytes[index]
        switch byte {
        case UInt8(ascii: "\""):
          index += 1
          closed = true
          break scan
        case 0x0A, 0x0D:
          break scan
        case UInt8(ascii: "\\"):
          guard index + 1 < bytes.count else {
            index += 1
            break scan
          }
          let escape = bytes[index + 1]
          index += 2
          switch escape {
          case UInt8(ascii: "u"):
            var code: UInt32 = 0
            var digits = 0
            while digits < 4, index < bytes.count, let digit = Self.hexValue(bytes[index]) {
              code = code << 4 | digit
              digits += 1
              index += 1
            }
            guard digits == 4 else {
              text.flush()
              continue
            }
            text.append(unicode: code)
          case 0x0A, 0x0D:
            index -= 1
            break scan
          default: text.append(escape: escape)
          }
        default:
          text.append(byte: byte)
          index += 1
        }
      }
      nodes[node].end = index
      nodes[node].closed = closed
      nodes[node].text = text.text()
      return node
    }

    static func hexValue(_ byte: UInt8) -> UInt32? {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
      default: nil
      }
    }
  }
}
