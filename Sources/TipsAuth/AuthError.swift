/// Why a token was refused: a stable machine ``code`` and a human ``message``.
///
/// The message never contains the token, a part of it, or a secret: only what the verifier was configured with
/// (audiences, issuer, key ids it holds), the token's instants and what was wrong. Values the token made up (an
/// unknown `alg` or `kid`, a subject) are never echoed, so a message is safe to log and to return to the client.
public struct AuthError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What kind of refusal, stable across releases (clients and logs may match on ``rawValue``).
  public enum Code: String, Sendable, Hashable, CaseIterable {
    /// The token is longer than the verifier's limit (8 KiB by default); nothing else was looked at.
    case tooLarge
    /// Not a compact JWS (`header.payload.signature`, each base64url), a header or payload that is not a JSON object,
    /// a claim of the wrong type, or a `crit` header.
    case malformed
    /// `alg` is `none`, unknown, or of a kind this verifier has no key for (HS* without a secret, RS*/ES* without a
    /// JWKS).
    case unsupportedAlgorithm
    /// An RS*/ES* token without a `kid`, or with a `kid` the JWKS does not hold. Refused before any signature work.
    case unknownKey
    /// The `kid` names a key of another kind than `alg` needs (an EC key for RS256, a P-256 key for ES384, an RSA
    /// key whose JWK pins RS256 for RS512).
    case algorithmMismatch
    /// The signature does not verify with the key (or secrets).
    case badSignature
    /// The token has no `exp`: tipsd accepts only tokens that expire.
    case missingExpiry
    /// `exp` plus the leeway is not after now.
    case expired
    /// `nbf` (or `iat`) minus the leeway is after now.
    case notYetValid
    /// An audience is configured and no value of the token's `aud` is one of them.
    case wrongAudience
    /// An issuer is configured and the token's `iss` is not it.
    case wrongIssuer
    /// `sub` is missing, empty, longer than 255 bytes, or holds a byte outside `A–Z a–z 0–9 . _ : @ | + = -`.
    case badSubject
    /// Refused before its signature was checked: the server has spent its budget of failed signature checks (a
    /// flood of forged tokens); retry later. Not a judgement of the token.
    case throttled
  }

  /// The kind of refusal.
  public let code: Code
  /// One sentence saying what was wrong, safe to log and show.
  public let message: String

  /// Creates a refusal.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  /// `expired: the token expired at …`.
  public var description: String { "\(code.rawValue): \(message)" }
}
