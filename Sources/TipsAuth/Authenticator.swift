/// Who a token signs in (issue #44): a hosted node asks this, never the JWT code directly. ``TokenVerifier`` is the
/// production one (the app's JWTs: HMAC secrets or a JWKS); tests hand in one that names principals without minting
/// tokens, so hosted logic is tested in process without PyJWT.
public protocol Authenticator: Sendable {
  /// Tokens longer than this are refused before anything else looks at them.
  var maxTokenBytes: Int { get }
  /// The token's verified claims, or why it is refused. `beforeSignature` runs once the claims are checked and
  /// before any signature is (an error it returns refuses the token unchecked: the sign-in guard's budget).
  func verify(
    _ token: String, now: Double, beforeSignature: TokenVerifier.BeforeSignature?
  ) -> Result<VerifiedToken, AuthError>
}

extension TokenVerifier: Authenticator {
  public var maxTokenBytes: Int { configuration.maxTokenBytes }
}

extension VerifiedToken {
  /// A token's claims as an ``Authenticator`` that is not a JWT verifier vouches for them (tests).
  public init(
    subject: String, expiresAt: Double, acceptedUntil: Double? = nil, issuedAt: Double? = nil,
    audience: [String] = [], issuer: String? = nil
  ) {
    self.init(
      subject: subject, expiresAt: expiresAt, acceptedUntil: acceptedUntil ?? expiresAt, notBefore: nil,
      issuedAt: issuedAt, audience: audience, issuer: issuer, keyID: nil, algorithm: .hs256)
  }
}
