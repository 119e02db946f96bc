import TipsJSON
import TipsTime

/// The registered claims of a payload, checked against the configuration at one instant (RFC 7519 §4.1) — before the
/// signature: cheaper, and a flood of expired or foreign tokens then costs no cryptography. Nothing a token claims
/// is trusted until its signature verifies.
struct ClaimsCheck {
  let configuration: TokenVerifier.Configuration
  let now: Double

  private var leeway: Double { configuration.leeway }

  func verify(_ payload: JSONObject, algorithm: JWTAlgorithm, keyID: String?) throws(AuthError) -> VerifiedToken {
    guard let expiryValue = payload["exp"] else {
      throw AuthError(.missingExpiry, "the token has no exp claim: tipsd accepts only tokens that expire")
    }
    let expiresAt = try instant(expiryValue, "exp")
    guard now < expiresAt + leeway else {
      throw AuthError(.expired, "the token expired at \(describe(expiresAt))\(leewayNote)")
    }
    let notBefore = try payload["nbf"].map { value throws(AuthError) in try instant(value, "nbf") }
    if let notBefore, now < notBefore - leeway {
      throw AuthError(.notYetValid, "the token is valid from \(describe(notBefore))\(leewayNote)")
    }
    let issuedAt = try payload["iat"].map { value throws(AuthError) in try instant(value, "iat") }
    if let issuedAt, issuedAt - leeway > now {
      throw AuthError(.notYetValid, "the token says it was issued at \(describe(issuedAt)), in the future\(leewayNote)")
    }
    let issuer = try string(payload["iss"], "iss")
    if let expected = configuration.issuer, issuer != expected {
      throw AuthError(
        .wrongIssuer,
        issuer == nil
          ? "the token has no iss claim; this server accepts issuer \(quoted(expected))"
          : "the token's issuer is not \(quoted(expected))")
    }
    let audience = try audiences(payload["aud"])
    if !configuration.audiences.isEmpty, !audience.contains(where: configuration.audiences.contains) {
      let accepted = configuration.audiences.map(quoted).joined(separator: ", ")
      throw AuthError(
        .wrongAudience,
        audience.isEmpty
          ? "the token has no aud claim; this server accepts audience \(accepted)"
          : "the token's audience is not \(accepted)")
    }
    guard let subjectValue = payload["sub"] else {
      throw AuthError(.badSubject, "the token has no sub claim (the account it signs in)")
    }
    guard case .string(let subject) = subjectValue else {
      throw AuthError(.badSubject, "sub is a \(subjectValue.typeName), not a string")
    }
    if let problem = Subject.problem(subject) { throw AuthError(.badSubject, problem) }
    return VerifiedToken(
      subject: subject, expiresAt: expiresAt, acceptedUntil: expiresAt + leeway, notBefore: notBefore,
      issuedAt: issuedAt, audience: audience, issuer: issuer, keyID: keyID, algorithm: algorithm)
  }

  /// A NumericDate (seconds since the epoch, possibly fractional).
  private func instant(_ value: JSONValue, _ claim: String) throws(AuthError) -> Double {
    guard let seconds = value.doubleValue else {
      throw AuthError(.malformed, "\(claim) is a \(value.typeName), not a number of seconds since 1970")
    }
    return seconds
  }

  private func string(_ value: JSONValue?, _ claim: String) throws(AuthError) -> String? {
    guard let value else { return nil }
    guard case .string(let text) = value else {
      throw AuthError(.malformed, "\(claim) is a \(value.typeName), not a string")
    }
    return text
  }

  /// `aud`: one string or an array of strings (RFC 7519 §4.1.3).
  private func audiences(_ value: JSONValue?) throws(AuthError) -> [String] {
    switch value {
    case nil: return []
    case .string(let one)?: return [one]
    case .array(let many)?:
      var names: [String] = []
      for item in many {
        guard case .string(let name) = item else { throw AuthError(.malformed, "aud holds a \(item.typeName)") }
        names.append(name)
      }
      return names
    case let other?: throw AuthError(.malformed, "aud is a \(other.typeName), not a string or an array of strings")
    }
  }

  private var leewayNote: String {
    let seconds = leeway == leeway.rounded() ? String(Int(leeway)) : String(leeway)
    return "; now is \(describe(now)), leeway \(seconds) s"
  }

  /// An instant in UTC, or `a time out of range` for a number no calendar holds.
  private func describe(_ instant: Double) -> String {
    abs(instant) < 1e12 ? ISO8601.string(from: instant) : "a time out of range"
  }
}
