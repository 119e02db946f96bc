/// The text forms statements take their arrays in, and the channel an account's pushes notify.
extension PGSchema {
  /// A PostgreSQL array literal of texts: `{"a","b\\"c"}`.
  package static func textArray(_ items: [String]) -> String {
    var literal = "{"
    for (index, item) in items.enumerated() {
      if index > 0 { literal += "," }
      literal += "\""
      for character in item.unicodeScalars {
        if character == "\"" || character == "\\" { literal += "\\" }
        literal.unicodeScalars.append(character)
      }
      literal += "\""
    }
    return literal + "}"
  }

  /// A PostgreSQL array literal of integers: `{1,2}`.
  package static func integerArray(_ items: [Int64]) -> String {
    "{" + items.map(String.init).joined(separator: ",") + "}"
  }

  /// The account's `NOTIFY` channel: `tipsd_` and 16 hex digits of FNV-1a (64-bit) of the account id — an identifier
  /// whatever the id holds; two accounts sharing one only cost a catch-up query that finds nothing.
  package static func channel(account: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in account.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    let hex = String(hash, radix: 16)
    return "tipsd_" + String(repeating: "0", count: 16 - hex.count) + hex
  }
}
