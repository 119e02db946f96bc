import TipsSystem

/// A shared secret for HS256, HS384 and HS512 tokens: what `--jwt-secret-file FILE` holds.
///
/// The file format: the secret is the file's bytes as they are, after removing one trailing newline (`\n` or
/// `\r\n`, as `echo` or an editor leaves) — nothing else is trimmed or decoded. A secret that looks like base64 is
/// used as that text, as Supabase and most HS256 issuers do.
///
/// A secret shorter than the hash is refused (RFC 7518 §3.2: at least 32 bytes for HS256, 48 for HS384, 64 for
/// HS512): anyone holding one token could search a short secret offline and then sign any `sub`. A secret verifies
/// the HS algorithms its length allows (a 40-byte secret: HS256 only).
///
/// The secret's bytes are kept only inside OpenSSL's keyed contexts; ``description`` never shows them.
public struct HMACSecret: Sendable, CustomStringConvertible {
  /// The shortest secret accepted: HS256's hash size (RFC 7518 §3.2).
  public static let minimumBytes = 32

  /// Where the secret came from, for messages.
  public let source: String
  /// The secret's length in bytes.
  public let byteCount: Int
  /// The HS algorithms it verifies.
  public let algorithms: Set<JWTAlgorithm>
  private let templates: [JWTAlgorithm: HMACTemplate]

  /// A secret from its bytes, verifying `algorithms` (default: each of HS256, HS384 and HS512 whose hash is no
  /// longer than the secret). `source` names it in messages.
  public init(
    bytes: [UInt8], source: String = "<secret>", algorithms: Set<JWTAlgorithm>? = nil
  ) throws(AuthConfigurationError) {
    guard !bytes.isEmpty else {
      throw AuthConfigurationError(file: source, "the secret is empty (an empty HMAC key would verify nothing)")
    }
    guard bytes.count >= Self.minimumBytes else {
      throw AuthConfigurationError(
        file: source,
        "the secret is \(bytes.count) bytes; at least \(Self.minimumBytes) are needed (RFC 7518 §3.2): a shorter "
          + "one can be found offline from any token it signed (make one with `openssl rand -base64 48`)")
    }
    let allowed = JWTAlgorithm.allCases.filter { $0.family == .hmac && $0.digestSize <= bytes.count }
    let chosen = algorithms ?? Set(allowed)
    guard !chosen.isEmpty, chosen.allSatisfy({ $0.family == .hmac }) else {
      throw AuthConfigurationError(file: source, "a secret verifies HS256, HS384 or HS512 only")
    }
    if let short = chosen.filter({ $0.digestSize > bytes.count }).sorted(by: { $0.digestSize < $1.digestSize }).first {
      throw AuthConfigurationError(
        file: source, "the secret is \(bytes.count) bytes; \(short) needs at least \(short.digestSize)")
    }
    var templates: [JWTAlgorithm: HMACTemplate] = [:]
    for algorithm in chosen {
      guard let template = HMACTemplate(secret: bytes, algorithm: algorithm) else {
        throw AuthConfigurationError(file: source, "OpenSSL could not key HMAC-\(algorithm.digestName)")
      }
      templates[algorithm] = template
    }
    self.source = source
    self.byteCount = bytes.count
    self.algorithms = chosen
    self.templates = templates
  }

  /// Reads `--jwt-secret-file FILE` (see the type's documentation for the format).
  public static func load(
    file path: String, algorithms: Set<JWTAlgorithm>? = nil
  ) throws(AuthConfigurationError) -> HMACSecret {
    var bytes: [UInt8]
    do {
      bytes = try System.readFile(path)
    } catch {
      throw AuthConfigurationError(file: path, "cannot read the secret file: \(error.reason)")
    }
    if bytes.last == UInt8(ascii: "\n") {
      bytes.removeLast()
      if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
    }
    return try HMACSecret(bytes: bytes, source: path, algorithms: algorithms)
  }

  /// `HMAC secret from FILE (N bytes)` — never the bytes.
  public var description: String { "HMAC secret from \(source) (\(byteCount) bytes)" }

  /// Whether `signature` is this secret's `algorithm` HMAC of `input` (false for an algorithm it does not verify).
  func verify(_ input: UnsafeRawBufferPointer, signature: [UInt8], algorithm: JWTAlgorithm) -> Bool {
    templates[algorithm]?.verify(input, signature: signature) ?? false
  }
}
