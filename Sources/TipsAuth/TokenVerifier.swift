import TipsJSON

/// Verifies the JWTs an app already issues (hosted mode's sign-in): the signature with a key the configuration
/// holds, then `exp`, `nbf`, `iat`, `iss`, `aud` and `sub`.
///
/// A verifier is an immutable `Sendable` value: reloading the secret file or JWKS (on SIGHUP) means building a new
/// verifier and swapping it in; sessions verified by the old one are unaffected. ``verify(_:now:)`` is synchronous,
/// allocation-light and safe to call on an event loop: refusals that cost nothing come first (a few microseconds
/// or less), an HS256 token takes a few microseconds, RS256 tens and ES256 about a hundred (`make bench`: `auth.*`).
///
/// What is accepted:
/// - a compact JWS `header.payload.signature` of at most ``Configuration/maxTokenBytes`` (8 KiB), each part
///   canonical base64url without padding, header and payload JSON objects;
/// - `alg` HS256/HS384/HS512 with a configured ``HMACSecret``, or RS256/RS384/RS512 and ES256/ES384/ES512 with the
///   JWKS key named by the header's `kid` (``JSONWebKeySet``). The key decides: a secret verifies only HS*, an RSA
///   key only RS*, an EC key only its curve's ES*. `typ`, `jku`, `jwk`, `x5u`, `x5c` are ignored (keys never come
///   from the token);
/// - `exp` (required, a number) with `now < exp + leeway`; `nbf` (optional) with `now ≥ nbf − leeway`; `iat`
///   (optional) no later than `now + leeway`;
/// - `iss` equal to the configured issuer, when one is configured; `aud` (a string or an array of strings) holding
///   one of the configured audiences, when some are configured;
/// - `sub`: the account, 1–255 bytes of `A–Z a–z 0–9 . _ : @ | + = -` (``Subject``).
///
/// Everything else is refused with an ``AuthError`` — `alg: none`, algorithms other than those above, a `kid` the
/// JWKS lacks, a `crit` header, a token without `exp` — in this order, cheapest first: size, shape, header (`alg`,
/// key), signature length, payload, claims, signature. A flood of garbage, unknown-`kid`, wrong-length, expired or
/// foreign-audience tokens costs no cryptography at all; a server may refuse the rest before their signature is
/// checked (``BeforeSignature``).
public struct TokenVerifier: Sendable {
  /// What a verifier accepts.
  public struct Configuration: Sendable {
    /// HMAC secrets for HS* tokens (`--jwt-secret-file`); a token passes if any of them verifies it (several allow a
    /// rotation). Empty: HS* tokens are refused.
    public var secrets: [HMACSecret]
    /// The public keys for RS* and ES* tokens (`--jwks`). nil: RS*/ES* tokens are refused.
    public var keySet: JSONWebKeySet?
    /// The accepted audiences (`--jwt-audience`): a token's `aud` must hold one of them. Empty: `aud` not checked.
    public var audiences: [String]
    /// The accepted issuer (`--jwt-issuer`): a token's `iss` must equal it. nil: `iss` not checked.
    public var issuer: String?
    /// Seconds of clock skew forgiven on `exp`, `nbf` and `iat` (`--jwt-leeway`, default 30, at most 3600).
    public var leeway: Double
    /// The longest token looked at, in bytes (default 8 KiB; typical tokens are under 1.5 KiB).
    public var maxTokenBytes: Int
    /// Who holds these keys, as a refusal for a missing kind names it: "this server" (the flags' keys, the default
    /// app's) or an app of `--apps` (`app "web"`), with where its secret and its JWKS would be set.
    public var owner = KeyOwner.server

    /// The default leeway, in seconds.
    public static let defaultLeeway: Double = 30
    /// The default token size limit, in bytes.
    public static let defaultMaxTokenBytes = 8 * 1024

    /// A configuration; at least one secret or a key set is needed.
    public init(
      secrets: [HMACSecret] = [], keySet: JSONWebKeySet? = nil, audiences: [String] = [], issuer: String? = nil,
      leeway: Double = Configuration.defaultLeeway, maxTokenBytes: Int = Configuration.defaultMaxTokenBytes
    ) {
      self.secrets = secrets
      self.keySet = keySet
      self.audiences = audiences
      self.issuer = issuer
      self.leeway = leeway
      self.maxTokenBytes = maxTokenBytes
    }
  }

  /// Whose keys a verifier holds, for its refusals: a token of a kind it has no key for says where that key is set.
  public struct KeyOwner: Sendable, Equatable {
    /// "this server", `app "web"`.
    public var name: String
    /// Where its HMAC secret and its JWKS are set.
    public var secretSetting: String
    public var jwksSetting: String

    /// The flags' keys (the default app's).
    public static let server = KeyOwner(name: "this server", secretSetting: "--jwt-secret-file", jwksSetting: "--jwks")

    /// An app of `--apps`: its entry's members.
    public static func app(_ id: String) -> KeyOwner {
      KeyOwner(name: "app \"\(id)\"", secretSetting: "its jwtSecretFile in --apps", jwksSetting: "its jwks in --apps")
    }
  }

  /// What this verifier accepts.
  public let configuration: Configuration

  /// A verifier for `configuration`, refused if it could accept nothing or its settings make no sense.
  public init(_ configuration: Configuration) throws(AuthConfigurationError) {
    func fail(_ message: String) -> AuthConfigurationError { AuthConfigurationError(file: nil, message) }
    guard !configuration.secrets.isEmpty || configuration.keySet != nil else {
      throw fail("no key to verify tokens with: give a secret file (--jwt-secret-file), a JWKS (--jwks), or both")
    }
    guard configuration.leeway.isFinite, (0...3600).contains(configuration.leeway) else {
      throw fail("the leeway must be between 0 and 3600 seconds")
    }
    guard (512...(1 << 20)).contains(configuration.maxTokenBytes) else {
      throw fail("the token size limit must be between 512 bytes and 1 MiB")
    }
    guard !configuration.audiences.contains(where: \.isEmpty) else { throw fail("an audience is empty") }
    guard configuration.issuer?.isEmpty != true else { throw fail("the issuer is empty") }
    self.configuration = configuration
  }

  /// Reads the files a server's flags name and builds a verifier: what `tipsd serve --hosted` does at start and on
  /// SIGHUP. Loading errors name the file, the key and the member.
  public static func load(
    secretFile: String? = nil, jwksFile: String? = nil, audiences: [String] = [], issuer: String? = nil,
    leeway: Double = Configuration.defaultLeeway, owner: KeyOwner = .server
  ) throws(AuthConfigurationError) -> TokenVerifier {
    let secrets = try secretFile.map { path throws(AuthConfigurationError) in [try HMACSecret.load(file: path)] } ?? []
    let keySet = try jwksFile.map { path throws(AuthConfigurationError) in try JSONWebKeySet.load(file: path) }
    var configuration = Configuration(
      secrets: secrets, keySet: keySet, audiences: audiences, issuer: issuer, leeway: leeway)
    configuration.owner = owner
    return try TokenVerifier(configuration)
  }

  /// Called with a token's claims once everything but its signature has been checked, before any cryptography: it
  /// may refuse the token (a server's budget of failed signature checks, ``AuthError/Code/throttled``).
  public typealias BeforeSignature = (VerifiedToken) -> AuthError?

  /// Verifies a token (the text after `Bearer `, or `initialize`'s `auth.token`) at `now` (seconds since the Unix
  /// epoch; the server passes its clock, tests a fixed instant).
  public func verify(
    _ token: String, now: Double, beforeSignature: BeforeSignature? = nil
  ) -> Result<VerifiedToken, AuthError> {
    var token = token
    return token.withUTF8 { verify(bytes: UnsafeRawBufferPointer($0), now: now, beforeSignature: beforeSignature) }
  }

  /// Verifies a token given as bytes (see ``verify(_:now:beforeSignature:)``).
  public func verify(
    _ token: [UInt8], now: Double, beforeSignature: BeforeSignature? = nil
  ) -> Result<VerifiedToken, AuthError> {
    token.withUnsafeBytes { verify(bytes: $0, now: now, beforeSignature: beforeSignature) }
  }

  private func verify(
    bytes token: UnsafeRawBufferPointer, now: Double, beforeSignature: BeforeSignature?
  ) -> Result<VerifiedToken, AuthError> {
    precondition(now.isFinite, "verify(now:) needs a finite instant")
    do throws(AuthError) {
      return .success(try check(token, now: now, beforeSignature: beforeSignature))
    } catch {
      return .failure(error)
    }
  }

  // MARK: - The steps, cheapest first

  /// Size, shape, header, key, the signature's length, payload and claims — then, last, the signature itself: a
  /// token that an expired, foreign-audience or malformed payload refuses costs no cryptography, so a flood of them
  /// costs little, and only tokens whose claims this server accepts reach the (hook and the) signature check.
  private func check(
    _ token: UnsafeRawBufferPointer, now: Double, beforeSignature: BeforeSignature?
  ) throws(AuthError) -> VerifiedToken {
    guard token.count <= configuration.maxTokenBytes else {
      throw AuthError(
        .tooLarge, "the token is \(token.count) bytes; at most \(configuration.maxTokenBytes) are accepted")
    }
    let parts = try CompactParts(token)
    let header = try decodeObject(parts.header, in: token, maxDepth: 4, what: "header")
    let algorithm = try algorithm(of: header)
    let verifier = try selectKey(for: algorithm, header: header)
    guard let encoded = Base64URL.decode(token[parts.signature]) else {
      throw AuthError(.malformed, "the signature is not base64url")
    }
    let signature = try verifier.prepare(signature: encoded)
    let payload = try decodeObject(parts.payload, in: token, maxDepth: 32, what: "payload")
    let verified = try ClaimsCheck(configuration: configuration, now: now).verify(
      payload, algorithm: algorithm, keyID: verifier.keyID)
    if let refusal = beforeSignature?(verified) { throw refusal }
    try verifier.check(signature: signature, signingInput: UnsafeRawBufferPointer(rebasing: token[parts.signingInput]))
    return verified
  }

  private func decodeObject(
    _ range: Range<Int>, in token: UnsafeRawBufferPointer, maxDepth: Int, what: String
  ) throws(AuthError) -> JSONObject {
    guard let bytes = Base64URL.decode(token[range]) else {
      throw AuthError(.malformed, "the \(what) is not base64url")
    }
    guard case .object(let object)? = try? JSONParser.parse(bytes, maxDepth: maxDepth) else {
      throw AuthError(.malformed, "the \(what) is not a JSON object")
    }
    return object
  }

  private func algorithm(of header: JSONObject) throws(AuthError) -> JWTAlgorithm {
    guard case .string(let name)? = header["alg"] else {
      throw AuthError(.malformed, "the header has no alg string")
    }
    guard header["crit"] == nil else {
      throw AuthError(.malformed, "the header has crit: tipsd implements no JWS extension")
    }
    guard let algorithm = JWTAlgorithm(rawValue: name) else {
      if name.lowercased() == "none" {
        throw AuthError(.unsupportedAlgorithm, "alg none (an unsigned token) is never accepted")
      }
      throw AuthError(
        .unsupportedAlgorithm, "the token's alg is not one tipsd verifies (\(JWTAlgorithm.acceptedNames))")
    }
    return algorithm
  }

  /// The key (or secrets) that may verify `algorithm`, chosen from the configuration — never from the token
  /// beyond its `kid`.
  private func selectKey(for algorithm: JWTAlgorithm, header: JSONObject) throws(AuthError) -> SignatureCheck {
    if algorithm.family == .hmac {
      guard !configuration.secrets.isEmpty else {
        let owner = configuration.owner
        throw AuthError(
          .unsupportedAlgorithm,
          "\(algorithm) tokens need an HMAC secret and \(owner.name) has none (\(owner.secretSetting))")
      }
      let secrets = configuration.secrets.filter { $0.algorithms.contains(algorithm) }
      guard !secrets.isEmpty else {
        throw AuthError(.unsupportedAlgorithm, "the HMAC secret does not verify \(algorithm)")
      }
      return .hmac(secrets, algorithm)
    }
    guard let keySet = configuration.keySet else {
      let owner = configuration.owner
      throw AuthError(
        .unsupportedAlgorithm, "\(algorithm) tokens need a JWKS and \(owner.name) has none (\(owner.jwksSetting))")
    }
    guard let kidValue = header["kid"] else {
      throw AuthError(.unknownKey, "the header has no kid: an \(algorithm) token must name its key")
    }
    guard case .string(let kid) = kidValue else { throw AuthError(.malformed, "the header's kid is not a string") }
    guard let key = keySet.key(id: kid) else {
      throw AuthError(.unknownKey, "no key of the JWKS has the token's kid (it holds \(keySet.keyIDList))")
    }
    guard key.algorithms.contains(algorithm) else {
      throw AuthError(.algorithmMismatch, "the token's kid names the \(key), which does not verify \(algorithm)")
    }
    return .publicKey(key, algorithm)
  }
}

/// The three parts of a compact JWS, as byte ranges of the token.
private struct CompactParts {
  let header: Range<Int>
  let payload: Range<Int>
  let signature: Range<Int>
  /// `header.payload`: the bytes the signature covers.
  var signingInput: Range<Int> { header.lowerBound..<payload.upperBound }

  init(_ token: UnsafeRawBufferPointer) throws(AuthError) {
    let dot = UInt8(ascii: ".")
    let first = token.firstIndex(of: dot)
    let second = first.flatMap { token[($0 + 1)...].firstIndex(of: dot) }
    // An empty signature is let through to be refused by name: `alg: none` tokens end with a dot.
    guard let first, let second, first > 0, second > first + 1, !token[(second + 1)...].contains(dot) else {
      throw AuthError(.malformed, "not a JWT: expected three base64url parts separated by dots")
    }
    header = 0..<first
    payload = (first + 1)..<second
    signature = (second + 1)..<token.count
  }
}

/// The key a token's signature is checked with, and the check.
private enum SignatureCheck {
  case hmac([HMACSecret], JWTAlgorithm)
  case publicKey(JSONWebKey, JWTAlgorithm)

  var keyID: String? {
    if case .publicKey(let key, _) = self { return key.keyID }
    return nil
  }

  /// Refuses a signature of the wrong length without any cryptography; returns it as OpenSSL checks it (an ECDSA
  /// signature turned from JOSE's `r||s` into DER).
  func prepare(signature: [UInt8]) throws(AuthError) -> [UInt8] {
    switch self {
    case .hmac(_, let algorithm):
      let expected = algorithm.digestSize
      guard signature.count == expected else { throw wrongLength(signature.count, expected, "an \(algorithm) MAC") }
      return signature
    case .publicKey(let key, _):
      switch key.kind {
      case .rsa:
        let expected = key.key.signatureSize
        guard signature.count == expected else { throw wrongLength(signature.count, expected, "the \(key)") }
        return signature
      case .ec(let curve):
        guard let der = ecdsaSignatureDER(raw: signature, size: curve.coordinateSize) else {
          throw wrongLength(signature.count, 2 * curve.coordinateSize, "the \(key)")
        }
        return der
      }
    }
  }

  /// Verifies a ``prepare(signature:)``d signature with OpenSSL.
  func check(signature: [UInt8], signingInput: UnsafeRawBufferPointer) throws(AuthError) {
    switch self {
    case .hmac(let secrets, let algorithm):
      guard secrets.contains(where: { $0.verify(signingInput, signature: signature, algorithm: algorithm) }) else {
        throw AuthError(
          .badSignature, "the signature does not verify with the HMAC secret\(secrets.count > 1 ? "s" : "")")
      }
    case .publicKey(let key, let algorithm):
      let digest = FetchedAlgorithms.shared.digest(for: algorithm)
      guard key.key.verify(signingInput, signature: signature, digest: digest) else {
        throw AuthError(.badSignature, "the signature does not verify with the \(key)")
      }
    }
  }

  private func wrongLength(_ count: Int, _ expected: Int, _ what: String) -> AuthError {
    AuthError(.badSignature, "the signature is \(count) bytes; \(what) makes \(expected)")
  }
}
