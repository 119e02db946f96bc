import Testing
import TipsAuth

/// Refusals that need no key material from PyJWT: the token's shape, its header, and the verifier's settings.
@Suite struct TokenShapeTests {
  static let verifier: TokenVerifier = {
    let secret = try! HMACSecret(bytes: Array("a shared secret of thirty-two bytes".utf8))
    return try! TokenVerifier(.init(secrets: [secret]))
  }()

  static func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

  static let payload = part(#"{"sub":"a","exp":2000000000}"#)
  static let signature = Base64URL.encode([UInt8](repeating: 7, count: 32))

  @Test(arguments: [
    ("", AuthError.Code.malformed, "not a JWT: expected three base64url parts separated by dots"),
    ("abc", .malformed, "not a JWT: expected three base64url parts separated by dots"),
    ("a.b", .malformed, "not a JWT: expected three base64url parts separated by dots"),
    ("a..c", .malformed, "not a JWT: expected three base64url parts separated by dots"),
    (".b.c", .malformed, "not a JWT: expected three base64url parts separated by dots"),
    ("a.b.c.d", .malformed, "not a JWT: expected three base64url parts separated by dots"),
    ("Bearer a.b.c", .malformed, "the header is not base64url"),
    ("a+b.c.d", .malformed, "the header is not base64url"),
    ("\(part("[1]")).\(payload).\(signature)", .malformed, "the header is not a JSON object"),
    ("\(part("{")).\(payload).\(signature)", .malformed, "the header is not a JSON object"),
    ("\(part(#"{"typ":"JWT"}"#)).\(payload).\(signature)", .malformed, "the header has no alg string"),
    ("\(part(#"{"alg":256}"#)).\(payload).\(signature)", .malformed, "the header has no alg string"),
    (
      "\(part(#"{"alg":"none"}"#)).\(payload).", .unsupportedAlgorithm, "alg none (an unsigned token) is never accepted"
    ),
    (
      "\(part(#"{"alg":"NONE"}"#)).\(payload).", .unsupportedAlgorithm, "alg none (an unsigned token) is never accepted"
    ),
    (
      "\(part(#"{"alg":"hs256"}"#)).\(payload).\(signature)", .unsupportedAlgorithm,
      "the token's alg is not one tipsd verifies (HS256, HS384, HS512, RS256, RS384, RS512, ES256, ES384, ES512)"
    ),
    (
      "\(part(#"{"alg":"RS256","kid":"k"}"#)).\(payload).\(signature)", .unsupportedAlgorithm,
      "RS256 tokens need a JWKS and this server has none (--jwks)"
    ),
    ("\(part(#"{"alg":"HS256"}"#)).\(payload).", .badSignature, "the signature is 0 bytes; an HS256 MAC makes 32"),
    ("\(part(#"{"alg":"HS256"}"#)).\(payload).AAAA", .badSignature, "the signature is 3 bytes; an HS256 MAC makes 32"),
    (
      "\(part(#"{"alg":"HS256"}"#)).\(payload).\(signature)", .badSignature,
      "the signature does not verify with the HMAC secret"
    ),
    ("\(part(#"{"alg":"HS256"}"#)).\(payload).\(signature)=", .malformed, "the signature is not base64url"),
  ])
  func refusesBadShapes(token: String, code: AuthError.Code, message: String) {
    #expect(Self.verifier.verify(token, now: 1_700_000_000) == .failure(AuthError(code, message)))
  }

  @Test func tokenSizeIsCheckedFirst() {
    let huge = String(repeating: "A", count: 8193)
    #expect(
      Self.verifier.verify(huge, now: 0)
        == .failure(AuthError(.tooLarge, "the token is 8193 bytes; at most 8192 are accepted")))
    #expect(
      Self.verifier.verify(Array(huge.utf8), now: 0)
        == .failure(AuthError(.tooLarge, "the token is 8193 bytes; at most 8192 are accepted")))
    #expect(Self.verifier.verify(String(repeating: "A", count: 8192), now: 0).errorCode == .malformed)
  }

  /// An app of `--apps` without the key a token's kind needs says which app, and where that key is set (the flags'
  /// names would send its operator to the default app's keys).
  @Test func aKindOfTokenAnAppHasNoKeyForNamesTheApp() throws {
    var configuration = Self.verifier.configuration
    configuration.owner = .app("web")
    let web = try TokenVerifier(configuration)
    #expect(
      web.verify("\(Self.part(#"{"alg":"RS256","kid":"k"}"#)).\(Self.payload).\(Self.signature)", now: 1_700_000_000)
        == .failure(
          AuthError(.unsupportedAlgorithm, #"RS256 tokens need a JWKS and app "web" has none (its jwks in --apps)"#)))
  }

  @Test func configurationsThatMakeNoSenseAreRefused() throws {
    let secret = try HMACSecret(bytes: Array("a shared secret of thirty-two bytes".utf8))
    let cases: [(TokenVerifier.Configuration, String)] = [
      (.init(), "no key to verify tokens with: give a secret file (--jwt-secret-file), a JWKS (--jwks), or both"),
      (.init(secrets: [secret], leeway: -1), "the leeway must be between 0 and 3600 seconds"),
      (.init(secrets: [secret], leeway: .infinity), "the leeway must be between 0 and 3600 seconds"),
      (.init(secrets: [secret], audiences: ["app", ""]), "an audience is empty"),
      (.init(secrets: [secret], issuer: ""), "the issuer is empty"),
      (.init(secrets: [secret], maxTokenBytes: 100), "the token size limit must be between 512 bytes and 1 MiB"),
    ]
    for (configuration, message) in cases {
      #expect(throws: AuthConfigurationError(file: nil, message)) { try TokenVerifier(configuration) }
    }
  }

  @Test(
    arguments: [
      ("alice", nil), ("auth0|64f0c0ffee", nil), ("google-oauth2|1080", nil), ("a.b+c@example.com", nil),
      ("urn:user:42", nil), ("key=value", nil), ("5f0c7a52-2d1b-4c1e-9a3e-0b1e6f3d9c11", nil),
      ("", "sub is empty"),
      ("alice bob", "sub holds a character outside A-Z a-z 0-9 . _ : @ | + = - (the characters of an account name)"),
      ("alice/../bob", "sub holds a character outside A-Z a-z 0-9 . _ : @ | + = - (the characters of an account name)"),
      ("élodie", "sub holds a character outside A-Z a-z 0-9 . _ : @ | + = - (the characters of an account name)"),
      ("a\u{0}b", "sub holds a character outside A-Z a-z 0-9 . _ : @ | + = - (the characters of an account name)"),
    ] as [(String, String?)])
  func subjectRule(subject: String, problem: String?) {
    #expect(Subject.problem(subject) == problem)
  }
}

extension Result where Failure == AuthError {
  var errorCode: AuthError.Code? {
    if case .failure(let error) = self { return error.code }
    return nil
  }
}
