extension JSONValue {
  /// The compact JSON encoding of the value.
  public func serialized() -> [UInt8] {
    var writer = JSONWriter()
    writer.write(self)
    return writer.bytes
  }

  /// The compact JSON encoding of the value as a string.
  public var jsonString: String {
    String(decoding: serialized(), as: UTF8.self)
  }

  /// A human-readable encoding: one member or element per line, nested
  /// levels indented by `indent` spaces, `"key": value` with a space after
  /// the colon, and empty containers written as `{}` / `[]`.
  public func prettyString(indent: Int = 2) -> String {
    var printer = PrettyPrinter(indent: indent)
    printer.print(self, level: 0)
    return String(decoding: printer.writer.bytes, as: UTF8.self)
  }
}

/// Indented rendering for `JSONValue.prettyString(indent:)`.
private struct PrettyPrinter {
  let indent: Int
  var writer = JSONWriter()

  init(indent: Int) {
    self.indent = indent
  }

  mutating func newline(level: Int) {
    writer.bytes.append(0x0A)
    writer.bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: level * indent))
  }

  mutating func print(_ value: JSONValue, level: Int) {
    switch value {
    case .array(let elements) where !elements.isEmpty:
      writer.bytes.append(UInt8(ascii: "["))
      for (i, element) in elements.enumerated() {
        if i > 0 { writer.bytes.append(UInt8(ascii: ",")) }
        newline(level: level + 1)
        print(element, level: level + 1)
      }
      newline(level: level)
      writer.bytes.append(UInt8(ascii: "]"))
    case .object(let object) where !object.isEmpty:
      writer.bytes.append(UInt8(ascii: "{"))
      for (i, member) in object.enumerated() {
        if i > 0 { writer.bytes.append(UInt8(ascii: ",")) }
        newline(level: level + 1)
        writer.appendQuoted(member.key)
        writer.bytes.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
        print(member.value, level: level + 1)
      }
      newline(level: level)
      writer.bytes.append(UInt8(ascii: "}"))
    default:
      var scalar = JSONWriter(reservingCapacity: 0)
      scalar.write(value)
      writer.bytes.append(contentsOf: scalar.bytes)
    }
  }
}
