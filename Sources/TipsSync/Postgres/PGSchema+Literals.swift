/// The text forms statements take their arrays in, and the channel an account's pushes notify.
extension PGSchema {
  /// A PostgreSQL array literal of texts: `{"a","b\\"c"}`. Built from the UTF-8 bytes (a quote or backslash byte
  /// is never part of a longer character there): a hosted commit builds one for every turn's operations, and a
  /// character at a time it was a tenth of the node's CPU per donation (#47).
  package static func textArray(_ items: [String]) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(items.reduce(2) { $0 + $1.utf8.count + 3 })
    bytes.append(UInt8(ascii: "{"))
    for (index, item) in items.enumerated() {
      if index > 0 { bytes.append(UInt8(ascii: ",")) }
      bytes.append(UInt8(ascii: "\""))
      for byte in item.utf8 {
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
        bytes.append(byte)
      }
      bytes.append(UInt8(ascii: "\""))
    }
    bytes.append(UInt8(ascii: "}"))
    return String(decoding: bytes, as: UTF8.self)
  }

  /// A PostgreSQL array literal of integers: `{1,2}`.
  package static func integerArray(_ items: [Int64]) -> String {
    "{" + items.map(String.init).joined(separator: ",") + "}"
  }

  /// The account's `NOTIFY` channel: `tipsd_` and 16 hex digits of FNV-1a (64-bit) of the account id — an identifier
  /// whatever the id holds; two accounts sharing one only cost a catch-up query that finds nothing.
  package static func channel(account: String) -> String {
    var bytes: [UInt8] = []
    appendChannel(account: account, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// ``channel(account:)``'s bytes, appended to `bytes` (a commit's notifications are built as bytes).
  package static func appendChannel(account: String, to bytes: inout [UInt8]) {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in account.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    // Written in a buffer on the stack and appended at once (a commit writes one an account: #47).
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 22) { buffer in
      channelPrefix.withUTF8Buffer { prefix in
        for index in 0..<6 { buffer[index] = prefix[index] }
      }
      for digit in 0..<16 {
        let nibble = UInt8(truncatingIfNeeded: hash >> UInt64(60 - 4 * digit)) & 0xF
        buffer[6 + digit] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
      }
      bytes.append(contentsOf: UnsafeBufferPointer(buffer))
    }
  }

  /// `tipsd_`, the start of every account's channel name.
  private static let channelPrefix: StaticString = "tipsd_"

  /// `value` in decimal (ASCII), appended to `bytes`.
  package static func appendDecimal(_ value: Int64, to bytes: inout [UInt8]) {
    let count = decimalCount(value)
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
      var magnitude = value.magnitude
      var at = count
      repeat {
        at -= 1
        buffer[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
        magnitude /= 10
      } while magnitude > 0
      if value < 0 { buffer[0] = UInt8(ascii: "-") }
      bytes.append(contentsOf: UnsafeBufferPointer(buffer))
    }
  }

  /// How many bytes ``appendDecimal(_:to:)`` appends for `value`.
  package static func decimalCount(_ value: Int64) -> Int {
    var count = value < 0 ? 2 : 1
    var magnitude = value.magnitude
    while magnitude >= 10 {
      magnitude /= 10
      count += 1
    }
    return count
  }
}
