/// A small, pure XML reader for the XLIFF files `tipsd strings import` reads — untrusted input, so it does only what
/// those need and refuses the rest with a message naming the line:
///
/// - elements, attributes (single or double quoted), text, CDATA sections, comments and processing instructions
///   (the last two skipped); namespace prefixes are kept in names (``XMLElement/localName`` drops them);
/// - character references (`&#233;`, `&#xE9;`) and the five predefined entities, nothing else: a `<!DOCTYPE` is
///   refused outright, so no entity can be declared — no external entities, no entity expansion ("billion laughs");
/// - UTF-8 only (a byte order mark is skipped); characters XML 1.0 forbids are refused;
/// - bounded: at most ``maximumDepth`` nested elements, and every loop consumes input.
///
/// No Foundation: `XMLParser`'s behaviour differs between platforms and versions, and this reader is what the fuzz
/// target `xliff` exercises.
public enum XMLReader {
  /// How deeply elements may nest (XLIFF needs about six).
  public static let maximumDepth = 64

  /// Why a document was refused, with the line (1-based) where it happened.
  public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public var description: String { "line \(line): \(message)" }
  }

  /// Parses a whole document: its root element.
  public static func parse(_ bytes: [UInt8]) throws(Failure) -> XMLElement {
    var reader = Cursor(bytes: bytes)
    return try reader.document()
  }

  private struct Cursor {
    let bytes: [UInt8]
    var index = 0
    var line = 1

    init(bytes: [UInt8]) {
      self.bytes = bytes
      if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    func fail(_ message: String) -> Failure { Failure(line: line, message: message) }

    var atEnd: Bool { index >= bytes.count }

    func peek(_ text: StaticString) -> Bool {
      let count = text.utf8CodeUnitCount
      guard index + count <= bytes.count else { return false }
      let needle = UnsafeBufferPointer(start: text.utf8Start, count: count)
      return bytes[index..<(index + count)].elementsEqual(needle)
    }

    mutating func advance(_ count: Int = 1) {
      for _ in 0..<count where index < bytes.count {
        if bytes[index] == 0x0A { line += 1 }
        index += 1
      }
    }

    mutating func expect(_ text: StaticString) throws(Failure) {
      guard peek(text) else { throw fail("expected \"\(text)\"") }
      advance(text.utf8CodeUnitCount)
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    mutating func skipSpace() {
      while !atEnd && Self.isSpace(bytes[index]) { advance() }
    }

    /// Skips up to and past `terminator`.
    mutating func skip(past terminator: StaticString, what: String) throws(Failure) {
      let start = line
      while !atEnd {
        if peek(terminator) {
          advance(terminator.utf8CodeUnitCount)
          return
        }
        advance()
      }
      throw Failure(line: start, message: "unterminated \(what)")
    }

    /// Comments, processing instructions and space between markup.
    mutating func skipMisc() throws(Failure) {
      while true {
        skipSpace()
        if peek("<!--") {
          try skip(past: "-->", what: "comment")
        } else if peek("<?") {
          try skip(past: "?>", what: "processing instruction")
        } else {
          return
        }
      }
    }

    mutating func document() throws(Failure) -> XMLElement {
      try skipMisc()
      if peek("<!DOCTYPE") || peek("<!doctype") {
        throw fail("a DOCTYPE is not accepted (XLIFF needs none; entity declarations are refused)")
      }
      guard peek("<") else { throw fail("expected the root element") }
      let root = try element(depth: 1)
      try skipMisc()
      guard atEnd else { throw fail("content after the root element") }
      return root
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
      byte >= 0x80 || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
        || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x3A
    }

    mutating func name() throws(Failure) -> String {
      let start = index
      while !atEnd && Self.isNameByte(bytes[index]) { advance() }
      guard index > start, !(bytes[start] >= 0x30 && bytes[start] <= 0x39), bytes[start] != 0x2D, bytes[start] != 0x2E
      else { throw fail("expected a name") }
      return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func element(depth: Int) throws(Failure) -> XMLElement {
      guard depth <= XMLReader.maximumDepth else {
        throw fail("elements nest more than \(XMLReader.maximumDepth) deep")
      }
      let elementLine = line
      try expect("<")
      let tag = try name()
      var attributes: [(name: String, value: String)] = []
      while true {
        let spaced = !atEnd && Self.isSpace(bytes[index])
        skipSpace()
        if peek("/>") {
          advance(2)
          return XMLElement(name: tag, attributes: attributes, children: [], line: elementLine)
        }
        if peek(">") {
          advance()
          break
        }
        guard spaced else { throw fail("expected a space, \">\" or \"/>\" in <\(tag)>") }
        let attribute = try name()
        skipSpace()
        try expect("=")
        skipSpace()
        guard !atEnd, bytes[index] == 0x22 || bytes[index] == 0x27 else { throw fail("expected a quoted value") }
        let quote = bytes[index]
        advance()
        let value = try text(until: quote, inAttribute: true)
        advance()
        guard !attributes.contains(where: { $0.name == attribute }) else {
          throw fail("attribute \(attribute) appears twice in <\(tag)>")
        }
        attributes.append((attribute, value))
      }
      var children: [XMLNode] = []
      while true {
        if atEnd { throw Failure(line: elementLine, message: "<\(tag)> is never closed") }
        if peek("</") {
          advance(2)
          let closing = try name()
          guard closing == tag else { throw fail("</\(closing)> closes <\(tag)> (opened on line \(elementLine))") }
          skipSpace()
          try expect(">")
          return XMLElement(name: tag, attributes: attributes, children: children, line: elementLine)
        }
        if peek("<!--") {
          try skip(past: "-->", what: "comment")
        } else if peek("<![CDATA[") {
          advance(9)
          let start = index
          let startLine = line
          while !atEnd && !peek("]]>") { advance() }
          guard !atEnd else { throw Failure(line: startLine, message: "unterminated CDATA section") }
          let raw = String(decoding: bytes[start..<index], as: UTF8.self)
          try Self.checkCharacters(raw, line: startLine)
          children.append(.text(raw))
          advance(3)
        } else if peek("<?") {
          try skip(past: "?>", what: "processing instruction")
        } else if peek("<!") {
          throw fail("a declaration is not accepted inside an element")
        } else if peek("<") {
          children.append(.element(try element(depth: depth + 1)))
        } else {
          children.append(.text(try text(until: 0x3C, inAttribute: false)))
        }
      }
    }

    /// Text up to `terminator` (not consumed), references decoded, line ends normalised to LF.
    mutating func text(until terminator: UInt8, inAttribute: Bool) throws(Failure) -> String {
      var out: [UInt8] = []
      while true {
        guard !atEnd else {
          if inAttribute { throw fail("unterminated attribute value") }
          return try Self.string(out, line: line)
        }
        let byte = bytes[index]
        if byte == terminator { return try Self.string(out, line: line) }
        if inAttribute && byte == 0x3C { throw fail("\"<\" in an attribute value") }
        if byte == 0x26 {
          out += try reference()
          continue
        }
        if byte == 0x0D {
          // XML's end-of-line handling: CR LF and a lone CR read as LF (a CR written as &#13; stays).
          advance()
          if !atEnd && bytes[index] == 0x0A { advance() }
          out.append(inAttribute ? 0x20 : 0x0A)
          continue
        }
        if inAttribute && (byte == 0x0A || byte == 0x09) {
          out.append(0x20)
        } else {
          out.append(byte)
        }
        advance()
      }
    }

    /// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&#N;` `&#xN;`, as UTF-8.
    mutating func reference() throws(Failure) -> [UInt8] {
      let start = index
      advance()
      while !atEnd && bytes[index] != 0x3B && index - start < 12 { advance() }
      guard !atEnd, bytes[index] == 0x3B else { throw fail("an \"&\" that is not a reference (write &amp;)") }
      let body = String(decoding: bytes[(start + 1)..<index], as: UTF8.self)
      advance()
      switch body {
      case "amp": return [0x26]
      case "lt": return [0x3C]
      case "gt": return [0x3E]
      case "quot": return [0x22]
      case "apos": return [0x27]
      default: break
      }
      guard body.hasPrefix("#") else { throw fail("unknown entity &\(body); (only the five predefined ones)") }
      let digits = body.dropFirst()
      let code: UInt32? = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
      guard let code, let scalar = Unicode.Scalar(code), Self.isAllowed(scalar) else {
        throw fail("&\(body); is not a character XML allows")
      }
      return Array(String(Character(scalar)).utf8)
    }

    /// XML 1.0's Char: tab, LF, CR, and U+0020 up (no surrogates, U+FFFE, U+FFFF).
    static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
      let value = scalar.value
      return value == 0x09 || value == 0x0A || value == 0x0D || (value >= 0x20 && value != 0xFFFE && value != 0xFFFF)
    }

    static func checkCharacters(_ text: String, line: Int) throws(Failure) {
      for scalar in text.unicodeScalars where !isAllowed(scalar) {
        throw Failure(
          line: line, message: "U+\(String(scalar.value, radix: 16, uppercase: true)) is not allowed in XML")
      }
    }

    /// Valid UTF-8 of allowed characters, as a String.
    static func string(_ bytes: [UInt8], line: Int) throws(Failure) -> String {
      guard let text = String(validating: bytes, as: UTF8.self) else {
        throw Failure(line: line, message: "the text is not valid UTF-8")
      }
      try checkCharacters(text, line: line)
      return text
    }
  }
}

/// A node of an ``XMLElement``'s content.
public enum XMLNode: Sendable, Hashable {
  case element(XMLElement)
  case text(String)
}

/// An element as ``XMLReader`` reads it.
public struct XMLElement: Sendable, Hashable {
  /// As written, with any namespace prefix (`xliff:trans-unit`).
  public var name: String
  public var attributes: [(name: String, value: String)]
  public var children: [XMLNode]
  /// Where its start tag begins (1-based).
  public var line: Int

  public init(name: String, attributes: [(name: String, value: String)], children: [XMLNode], line: Int) {
    self.name = name
    self.attributes = attributes
    self.children = children
    self.line = line
  }

  /// The name without its namespace prefix.
  public var localName: String { Self.local(name) }

  static func local(_ name: String) -> String {
    guard let colon = name.lastIndex(of: ":") else { return name }
    return String(name[name.index(after: colon)...])
  }

  /// An attribute by its name as written (`xml:space`), else by local name (`target-language`).
  public func attribute(_ name: String) -> String? {
    attributes.first { $0.name == name }?.value ?? attributes.first { Self.local($0.name) == name }?.value
  }

  /// Child elements with this local name.
  public func elements(_ localName: String) -> [XMLElement] {
    children.compactMap { if case .element(let child) = $0, child.localName == localName { child } else { nil } }
  }

  /// All text inside, inline elements' text included.
  public var text: String {
    var out = ""
    for child in children {
      switch child {
      case .text(let text): out += text
      case .element(let element): out += element.text
      }
    }
    return out
  }

  public static func == (a: XMLElement, b: XMLElement) -> Bool {
    a.name == b.name && a.children == b.children && a.line == b.line
      && a.attributes.elementsEqual(b.attributes) { $0 == $1 }
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(name)
    hasher.combine(line)
  }
}
