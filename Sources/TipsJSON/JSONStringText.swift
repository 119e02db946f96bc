/// The text of a JSON string literal as a tolerant scanner decodes it, piece by piece: runs of raw UTF-8, one-letter
/// escapes and `\u` escapes (a high surrogate waits for the low one that follows; an unpaired one is dropped). The
/// catalog's position index and the language server's syntax tree both read string literals through it.
public struct JSONStringText {
  private var scalars = String.UnicodeScalarView()
  private var raw: [UInt8] = []
  private var pendingHigh: UInt32?

  public init() {}

  /// A byte of the literal's raw UTF-8.
  public mutating func append(byte: UInt8) {
    raw.append(byte)
  }

  /// The character a one-letter escape stands for: `\n`, `\t`, `\r`, `\b`, `\f`, else the escaped byte itself.
  public mutating func append(escape: UInt8) {
    flush()
    switch escape {
    case UInt8(ascii: "n"): scalars.append("\n")
    case UInt8(ascii: "t"): scalars.append("\t")
    case UInt8(ascii: "r"): scalars.append("\r")
    case UInt8(ascii: "b"): scalars.append("\u{08}")
    case UInt8(ascii: "f"): scalars.append("\u{0C}")
    default: scalars.append(Unicode.Scalar(escape))
    }
  }

  /// The code unit of a `\u` escape.
  public mutating func append(unicode code: UInt32) {
    flush()
    if (0xD800...0xDBFF).contains(code) {
      pendingHigh = code
    } else if (0xDC00...0xDFFF).contains(code), let high = pendingHigh {
      if let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)) { scalars.append(scalar) }
      pendingHigh = nil
    } else if let scalar = Unicode.Scalar(code) {
      scalars.append(scalar)
    }
  }

  /// The text so far.
  public mutating func text() -> String {
    flush()
    return String(scalars)
  }

  /// Ends the raw run where an escape stood that adds nothing (a malformed `\u`): the bytes on either side are
  /// decoded apart, as on either side of any escape.
  public mutating func flush() {
    guard !raw.isEmpty else { return }
    scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
    raw.removeAll()
  }
}
