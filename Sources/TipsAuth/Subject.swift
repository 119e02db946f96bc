/// The rule for `sub`, the account a token signs in: 1 to 255 bytes, each one of `A–Z a–z 0–9 . _ : @ | + = -`.
///
/// That covers Firebase uids (28 letters and digits), Auth0's `provider|id` (`google-oauth2|1080…`,
/// `auth0|64f…`), Supabase's UUIDs, emails and URNs, while an account name can never carry quotes, spaces, slashes,
/// control characters or non-ASCII look-alikes into logs, file names or SQL.
public enum Subject {
  /// The longest subject accepted, in bytes.
  public static let maxBytes = 255

  /// Why `subject` is not an acceptable account name, or nil if it is. The reason never repeats the subject.
  public static func problem(_ subject: String) -> String? {
    let utf8 = subject.utf8
    if utf8.isEmpty { return "sub is empty" }
    if utf8.count > maxBytes { return "sub is \(utf8.count) bytes; an account name is at most \(maxBytes)" }
    if !utf8.allSatisfy(isAllowed) {
      return "sub holds a character outside A-Z a-z 0-9 . _ : @ | + = - (the characters of an account name)"
    }
    return nil
  }

  /// Whether `byte` may appear in an account name.
  @inline(__always)
  static func isAllowed(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"):
      return true
    case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "|"),
      UInt8(ascii: "+"), UInt8(ascii: "="), UInt8(ascii: "-"):
      return true
    default:
      return false
    }
  }
}
