// Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over `{id}.{timestamp}.{body}` with the
// endpoint's secret, base64-encoded. Every byte of cryptography is OpenSSL's (EVP_MAC, RAND_bytes, EVP_EncodeBlock).
internal import COpenSSL

/// An endpoint's signing secret: `whsec_` followed by the base64 of its key bytes (the Standard Webhooks form).
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
  /// The key bytes HMAC is keyed with.
  public let key: [UInt8]

  public static let prefix = "whsec_"

  /// Parses `whsec_<base64>`; nil when the prefix is missing, the base64 is malformed, or the key is shorter than
  /// 24 bytes or longer than 64 (the spec's bounds).
  public init?(_ text: String) {
    guard text.hasPrefix(Self.prefix) else { return nil }
    guard let key = Base64.decode(String(text.dropFirst(Self.prefix.count))), (24...64).contains(key.count) else {
      return nil
    }
    self.key = key
  }

  public init(key: [UInt8]) { self.key = key }

  /// A new secret of 32 random bytes (OpenSSL's `RAND_bytes`).
  public static func generate() -> WebhookSecret {
    var bytes = [UInt8](repeating: 0, count: 32)
    let drawn = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
    precondition(drawn == 1, "OpenSSL's RAND_bytes failed")
    return WebhookSecret(key: bytes)
  }

  /// `whsec_` and the key's base64.
  public var description: String { Self.prefix + Base64.encode(key) }
}

/// Signs webhook messages per the Standard Webhooks specification.
public enum WebhookSigner {
  /// The `webhook-signature` header's value: `v1,` and the base64 of HMAC-SHA256(key, "{id}.{timestamp}.{body}").
  public static func signature(secret: WebhookSecret, id: String, timestamp: Int64, body: [UInt8]) -> String {
    var input = Array("\(id).\(timestamp).".utf8)
    input.append(contentsOf: body)
    return "v1," + Base64.encode(hmacSHA256(key: secret.key, input))
  }

  /// HMAC-SHA256 of `input` under `key`, through OpenSSL's EVP_MAC.
  static func hmacSHA256(key: [UInt8], _ input: [UInt8]) -> [UInt8] {
    // An empty key is a valid HMAC key, but OpenSSL refuses a null pointer: key one zero byte's address with length 0.
    let keyBytes = key.isEmpty ? [0] : key
    guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { preconditionFailure("OpenSSL has no HMAC") }
    defer { EVP_MAC_free(mac) }
    guard let context = EVP_MAC_CTX_new(mac) else { preconditionFailure("EVP_MAC_CTX_new failed") }
    defer { EVP_MAC_CTX_free(context) }
    var digestName = Array("SHA256".utf8CString)
    var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length = 0
    let ok = OSSL_MAC_PARAM_DIGEST.withCString { name in
      digestName.withUnsafeMutableBufferPointer { digest in
        var parameters = [OSSL_PARAM_construct_utf8_string(name, digest.baseAddress, 0), OSSL_PARAM_construct_end()]
        return keyBytes.withUnsafeBufferPointer { keyPointer in
          EVP_MAC_init(context, keyPointer.baseAddress, key.count, &parameters) == 1
            && input.withUnsafeBufferPointer { EVP_MAC_update(context, $0.baseAddress, $0.count) } == 1
            && EVP_MAC_final(context, &output, &length, output.count) == 1
        }
      }
    }
    precondition(ok, "OpenSSL's HMAC-SHA256 failed")
    return Array(output.prefix(length))
  }
}

/// Standard base64 (with padding) through OpenSSL's EVP_EncodeBlock and EVP_DecodeBlock.
public enum Base64 {
  public static func encode(_ bytes: [UInt8]) -> String {
    guard !bytes.isEmpty else { return "" }
    var output = [UInt8](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)
    let written = EVP_EncodeBlock(&output, bytes, Int32(bytes.count))
    return String(decoding: output.prefix(Int(written)), as: UTF8.self)
  }

  /// nil for text that is not padded standard base64.
  public static func decode(_ text: String) -> [UInt8]? {
    let input = Array(text.utf8)
    guard input.count % 4 == 0 else { return nil }
    guard !input.isEmpty else { return [] }
    let alphabet = { (byte: UInt8) in
      (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 43 || byte == 47
    }
    let padding = input.reversed().prefix { $0 == 61 }.count
    guard padding <= 2, input.dropLast(padding).allSatisfy(alphabet) else { return nil }
    var output = [UInt8](repeating: 0, count: input.count / 4 * 3)
    let written = EVP_DecodeBlock(&output, input, Int32(input.count))
    guard written >= 0 else { return nil }
    // EVP_DecodeBlock counts the padding's zero bytes: drop them.
    return Array(output.prefix(Int(written) - padding))
  }
}
