/// base64url (RFC 4648 §5), the encoding of every part of a JWT and of a JWK's numbers.
///
/// Decoding is strict, so one token has one spelling: only `A–Z a–z 0–9 - _`, no whitespace, no padding unless asked
/// for, and the unused low bits of the last character must be zero (otherwise `sig` and `sig'` would decode to the
/// same signature).
public enum Base64URL {
  /// The bytes `text` encodes, or nil when it is not canonical base64url. `allowingPadding`: trailing `=` (as some
  /// JWKS files write them) are accepted, in the right number only.
  public static func decode(_ text: some Collection<UInt8>, allowingPadding: Bool = false) -> [UInt8]? {
    if let result = text.withContiguousStorageIfAvailable({ decode(buffer: $0, allowingPadding: allowingPadding) }) {
      return result
    }
    return Array(text).withUnsafeBufferPointer { decode(buffer: $0, allowingPadding: allowingPadding) }
  }

  /// The bytes a string encodes (see ``decode(_:allowingPadding:)``).
  public static func decode(_ text: String, allowingPadding: Bool = false) -> [UInt8]? {
    decode(Array(text.utf8), allowingPadding: allowingPadding)
  }

  /// `bytes` as base64url without padding.
  public static func encode(_ bytes: some Collection<UInt8>) -> String {
    let bytes = Array(bytes)
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count * 4 + 2) / 3)
    var index = 0
    while index + 3 <= bytes.count {
      let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
      for shift in [18, 12, 6, 0] { out.append(alphabet[Int(chunk >> UInt32(shift) & 63)]) }
      index += 3
    }
    let rest = bytes.count - index
    if rest > 0 {
      let chunk = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
      for shift in [18, 12, 6].prefix(rest + 1) { out.append(alphabet[Int(chunk >> UInt32(shift) & 63)]) }
    }
    return String(decoding: out, as: UTF8.self)
  }

  private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

  /// Each byte's 6-bit value, or 0xFF for a byte outside the alphabet.
  private static let values: [UInt8] = {
    var table = [UInt8](repeating: 0xFF, count: 256)
    for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
    return table
  }()

  private static func decode(buffer: UnsafeBufferPointer<UInt8>, allowingPadding: Bool) -> [UInt8]? {
    var count = buffer.count
    if allowingPadding && count % 4 == 0 {
      var padding = 0
      while padding < 2 && count > 0 && buffer[count - 1] == UInt8(ascii: "=") {
        count -= 1
        padding += 1
      }
    }
    // A lone character in the last group encodes only 6 bits: never the tail of whole bytes.
    guard count % 4 != 1 else { return nil }
    return values.withUnsafeBufferPointer { table -> [UInt8]? in
      var out: [UInt8] = []
      out.reserveCapacity(count * 3 / 4)
      var accumulator: UInt32 = 0
      var bits = 0
      for index in 0..<count {
        let value = table[Int(buffer[index])]
        guard value != 0xFF else { return nil }
        accumulator = accumulator << 6 | UInt32(value)
        bits += 6
        if bits >= 8 {
          bits -= 8
          out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
          accumulator &= (1 << UInt32(bits)) - 1
        }
      }
      // Leftover bits (2 or 4) must be zero: a non-zero tail would be a second spelling of the same bytes.
      return accumulator == 0 ? out : nil
    }
  }
}
