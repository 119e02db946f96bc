import TipsSystem

/// A shared secret for HS256, HS384 and HS512 tokens: what `--jwt-secret-file FILE` holds.
///
/// The file format: the secret is the file's bytes as they are, after removing one trailing newline (`\n` or
/// `\r\n`, as `echo` or an editor leaves) — nothing else is trimmed or decoded. A secret that looks like base64 is
/// used as that text, as Supabase and most HS256 issuers do. An empty secret is refused: HMAC with an empty key
/// would accept tokens anyone can sign.
///
/// The secret's bytes are kept only inside OpenSSL's keyed contexts; ``description`` never shows them.
public struct HMACSecret: Sendable, CustomStringConvertible {
  /// RFC 7518 §3.2 asks for a key at least as long as the hash (32 bytes for HS256); shorter ones still load.
  public static let recommendedMinimumBytes = 32

  /// Where the secret came from, for messages.
  public let source: String
  /// The secret's length in bytes.
  public let byteCount: Int
  /// The HS algorithms it verifies.
  public let algorithms: Set<JWTAlgorithm>
  private let templates: [JWTAlgorithm: HMACTemplate]

  /// A secret from its bytes, verifying `algorithms` (default: HS256, HS384 and HS512). `source` names it in
  /// messages.
  public init(
    bytes: [UInt8], source: String = "<secret>",
    algorithms: Set<JWTAlgorithm> = [.hs256, .hs384, .hs512]
  ) throws(AuthConfigurationError) {
    guard !bytes.isEmpty else {
      throw AuthConfigurationError(file: source, "the secret is empty (an empty HMAC key would verify nothing)")
    }
    guard !algorithms.isEmpty, algorithms.allSatisfy({ $0.family == .hmac }) else {
      throw AuthConfigurationError(file: source, "a secret verifies HS256, HS384 or HS512 only")
    }
    var templates: [JWTAlgorithm: HMACTemplate] = [:]
    for algorithm in algorithms {
      guard let template = HMACTemplate(secret: bytes, algorithm: algorithm) else {
        throw AuthConfigurationError(file: source, "OpenSSL could not key HMAC-\(algorithm.digestName)")
      }
      templates[algorithm] = template
    }
    self.source = source
    self.byteCount = bytes.count
    self.algorithms = algorithms
    self.templates = templates
  }

  /// Reads `--jwt-secret-file FILE` (see the type's documentation for the format).
  public static func load(
    file path: String, algorithms: Set<JWTAlgorithm> = [.hs256, .hs384, .hs512]
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

  /// Whether the secret is shorter than RFC 7518 asks for HS256 (worth a warning when loading).
  public var isShorterThanRecommended: Bool { byteCount < Self.recommendedMinimumBytes }

  /// `HMAC secret from FILE (N bytes)` — never the bytes.
  public var description: String { "HMAC secret from \(source) (\(byteCount) bytes)" }

  /// Whether `signature` is this secret's `algorithm` HMAC of `input` (false for an algorithm it does not verify).
  func verify(_ input: UnsafeRawBufferPointer, signature: [UInt8], algorithm: JWTAlgorithm) -> Bool {
    templates[algorithm]?.verify(input, signature: signature) ?? false
  }
}
