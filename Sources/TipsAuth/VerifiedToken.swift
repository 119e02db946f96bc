/// What a verified token says: whose it is and until when it is good.
public struct VerifiedToken: Sendable, Hashable {
  /// `sub`: the account the token signs in (1–255 bytes of `A–Z a–z 0–9 . _ : @ | + = -`).
  public let subject: String
  /// `exp`: when the token expires (seconds since the Unix epoch).
  public let expiresAt: Double
  /// `exp` plus the verifier's leeway: from this instant on ``TokenVerifier/verify(_:now:)`` refuses the token as
  /// expired, so a server ends the token's session then.
  public let acceptedUntil: Double
  /// `nbf`, if the token has one.
  public let notBefore: Double?
  /// `iat`, if the token has one.
  public let issuedAt: Double?
  /// `aud`, as a list (a single string becomes one element; no `aud` is empty).
  public let audience: [String]
  /// `iss`, if the token has one.
  public let issuer: String?
  /// The `kid` of the JWKS key that verified it; nil for a token verified with an HMAC secret.
  public let keyID: String?
  /// The algorithm it was verified with.
  public let algorithm: JWTAlgorithm
}
