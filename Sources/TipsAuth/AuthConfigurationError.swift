/// Why a secret file or a JWKS could not be loaded, pointing at the file, the key (its index in `keys`, from 0) and
/// the member: `jwks.json: key 2 (kid "a1"): n: not base64url`.
public struct AuthConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The file (as given on the command line), or a label such as `<jwks>` for bytes that did not come from one; nil
  /// for a problem with the verifier's settings rather than a file.
  public let file: String?
  /// The index of the key in the JWKS's `keys` array, when the problem is in one key.
  public let keyIndex: Int?
  /// The key's `kid`, when it has one.
  public let keyID: String?
  /// The JSON member at fault (`n`, `crv`, `keys`), when there is one.
  public let field: String?
  /// What is wrong. Never contains a secret's bytes.
  public let message: String

  /// Creates an error.
  public init(file: String?, keyIndex: Int? = nil, keyID: String? = nil, field: String? = nil, _ message: String) {
    self.file = file
    self.keyIndex = keyIndex
    self.keyID = keyID
    self.field = field
    self.message = message
  }

  /// `file: key N (kid "…"): field: message`, leaving out what does not apply.
  public var description: String {
    var text = file.map { "\($0): " } ?? ""
    if let keyIndex {
      text += "key \(keyIndex)"
      if let keyID { text += " (kid \(quoted(keyID)))" }
      text += ": "
    }
    if let field { text += "\(field): " }
    return text + message
  }
}

/// A configuration value in double quotes for a message, cut at 64 characters and with control characters escaped
/// (a key id comes from a file an operator wrote, but may still be odd).
func quoted(_ text: String) -> String {
  var out = "\""
  for (index, scalar) in text.unicodeScalars.enumerated() {
    if index == 64 {
      out += "…"
      break
    }
    switch scalar {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += "\\u{\(String(scalar.value, radix: 16))}"
    default: out.unicodeScalars.append(scalar)
    }
  }
  return out + "\""
}
