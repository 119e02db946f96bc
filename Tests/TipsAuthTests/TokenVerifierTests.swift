import Foundation
import Synchronization
import Testing
import TipsAuth
import TipsJSON
import TipsTestSupport

/// The verifiers the suites use, over PyJWT's keys (loaded from files, as `tipsd serve` does).
extension Minted {
  /// `--jwt-secret-file` and/or `--jwks`, with the audience and issuer tokens.json names unless told otherwise.
  func verifier(
    secret: Bool = true, jwks: Bool = true, audience: Bool = true, issuer: Bool = true, leeway: Double = 30
  ) throws -> TokenVerifier {
    try withTemporaryFile(secretFile, name: "secret") { secretPath in
      try withTemporaryFile(self.jwks, name: "jwks.json") { jwksPath in
        try TokenVerifier.load(
          secretFile: secret ? secretPath : nil, jwksFile: jwks ? jwksPath : nil,
          audiences: audience ? [self.audience] : [], issuer: issuer ? self.issuer : nil, leeway: leeway)
      }
    }
  }

  /// A verifier built from loaded parts, for settings `load` does not take (the token size limit).
  func verifier(maxTokenBytes: Int) throws -> TokenVerifier {
    let secret = try HMACSecret(bytes: Array(secretFile.dropLast()))
    return try TokenVerifier(
      .init(secrets: [secret], audiences: [audience], issuer: issuer, maxTokenBytes: maxTokenBytes))
  }
}

/// The refusal `result` must be, with a message that repeats no part of the token and no secret.
func expectRefusal(
  _ result: Result<VerifiedToken, AuthError>, _ code: AuthError.Code, token: String, _ name: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  switch result {
  case .success(let verified):
    Issue.record("\(name): accepted (sub \(verified.subject)), expected \(code)", sourceLocation: sourceLocation)
  case .failure(let error):
    #expect(error.code == code, "\(name): \(error)", sourceLocation: sourceLocation)
    for part in token.split(separator: ".") where part.count >= 6 {
      #expect(!error.message.contains(part), "\(name): the message repeats the token", sourceLocation: sourceLocation)
    }
    for secretText in ["tipsd-test-secret", "DROP TABLE", "-----BEGIN"] {
      #expect(!error.message.contains(secretText), "\(name): \(error.message)", sourceLocation: sourceLocation)
    }
  }
}

@Suite(.enabled(if: PyJWT.available, PyJWT.skipReason))
struct TokenVerifierTests {
  /// Accepted with every check configured: name, subject, algorithm, key id.
  static let accepted: [(String, String, JWTAlgorithm, String?)] = [
    ("hs256", "user-1", .hs256, nil),
    ("hs384", "user-1", .hs384, nil),
    ("hs512", "user-1", .hs512, nil),
    ("rs256", "auth0|64f0c0ffee", .rs256, "rsa-a"),
    ("rs256-b", "google-oauth2|108001234567890", .rs256, "rsa-b"),
    ("rs384-b", "user-1", .rs384, "rsa-b"),
    ("rs512-b", "user-1", .rs512, "rsa-b"),
    ("es256", "5f0c7a52-2d1b-4c1e-9a3e-0b1e6f3d9c11", .es256, "ec-a"),
    ("es384", "user-1", .es384, "ec-384"),
    ("es512", "user-1", .es512, "ec-521"),
    ("aud-array", "user-1", .hs256, nil),
    ("float-times", "user-1", .hs256, nil),
    ("typ-at-jwt", "user-1", .rs256, "rsa-a"),
    ("firebase-sub", "Xq3bZ9kVfRhT2mN8pL5wY1cD4eA7", .hs256, nil),
    ("email-sub", "alice.smith+tips@example.com", .hs256, nil),
    ("sub-255", String(repeating: "a", count: 255), .hs256, nil),
  ]

  @Test func acceptsValidTokensOfEveryAlgorithm() throws {
    let minted = try PyJWT.minted()
    let verifier = try minted.verifier()
    for (name, subject, algorithm, keyID) in Self.accepted {
      switch verifier.verify(minted.token(name), now: minted.now) {
      case .success(let verified):
        #expect(verified.subject == subject, "\(name)")
        #expect(verified.algorithm == algorithm, "\(name)")
        #expect(verified.keyID == keyID, "\(name)")
      case .failure(let error):
        Issue.record("\(name): refused: \(error)")
      }
    }
  }

  @Test func verifiedTokenCarriesTheClaims() throws {
    let minted = try PyJWT.minted()
    let verified = try minted.verifier().verify(minted.token("rs256"), now: minted.now).get()
    #expect(verified.subject == "auth0|64f0c0ffee")
    #expect(verified.expiresAt == minted.now + 3600)
    #expect(verified.acceptedUntil == minted.now + 3600 + 30)
    #expect(verified.issuedAt == minted.now - 60)
    #expect(verified.notBefore == nil)
    #expect(verified.audience == [minted.audience])
    #expect(verified.issuer == minted.issuer)
    #expect(verified.keyID == "rsa-a")
    #expect(verified.algorithm == .rs256)
    let array = try minted.verifier().verify(minted.token("aud-array"), now: minted.now).get()
    #expect(array.audience == ["other-app", minted.audience])
    let fractional = try minted.verifier().verify(minted.token("float-times"), now: minted.now).get()
    #expect(fractional.expiresAt == minted.now + 0.5)
    #expect(fractional.issuedAt == minted.now - 0.25)
    let nbf = try minted.verifier().verify(minted.token("nbf"), now: minted.now + 100).get()
    #expect(nbf.notBefore == minted.now + 100)
  }

  /// Refused by the verifier with a secret, the JWKS, an audience and an issuer: issue 23's list and more.
  static let refused: [(String, AuthError.Code)] = [
    ("none", .unsupportedAlgorithm),
    ("none-signed", .unsupportedAlgorithm),
    ("none-capitalised", .unsupportedAlgorithm),
    ("ps256", .unsupportedAlgorithm),
    ("hs256-wrong-secret", .badSignature),
    ("tampered-payload", .badSignature),
    ("rs256-stranger-known-kid", .badSignature),
    ("es256-stranger", .badSignature),
    ("rs256-stranger-unknown-kid", .unknownKey),
    ("rs256-no-kid", .unknownKey),
    ("confusion-pem", .badSignature),
    ("confusion-pem-no-kid", .badSignature),
    ("confusion-der", .badSignature),
    ("confusion-pkcs1", .badSignature),
    ("rs256-kid-of-ec-key", .algorithmMismatch),
    ("es384-kid-of-p256-key", .algorithmMismatch),
    ("rs512-kid-pinned-rs256", .algorithmMismatch),
    ("crit", .malformed),
    ("padded-signature", .malformed),
    ("four-parts", .malformed),
    ("exp-string", .malformed),
    ("no-exp", .missingExpiry),
    ("expired", .expired),
    ("nbf", .notYetValid),
    ("iat-future", .notYetValid),
    ("wrong-audience", .wrongAudience),
    ("wrong-audience-array", .wrongAudience),
    ("no-audience", .wrongAudience),
    ("wrong-issuer", .wrongIssuer),
    ("no-issuer", .wrongIssuer),
    ("sub-empty", .badSubject),
    ("sub-256", .badSubject),
    ("sub-sql", .badSubject),
    ("sub-missing", .badSubject),
    ("sub-number", .badSubject),
    ("sub-unicode", .badSubject),
    ("sub-newline", .badSubject),
    ("sub-10k", .tooLarge),
  ]

  @Test func refusesEachWithItsCodeAndASafeMessage() throws {
    let minted = try PyJWT.minted()
    let verifier = try minted.verifier()
    for (name, code) in Self.refused {
      expectRefusal(verifier.verify(minted.token(name), now: minted.now), code, token: minted.token(name), name)
    }
    // The same verdicts for the token as bytes.
    for (name, code) in Self.refused {
      let result = verifier.verify(Array(minted.token(name).utf8), now: minted.now)
      expectRefusal(result, code, token: minted.token(name), name + " (bytes)")
    }
  }

  /// HS256 signed with the RSA key's public PEM or DER bytes as the secret: libjwt 1.10 accepts it when given that
  /// key. Here an HS* token is only ever checked with the HMAC secret: without one it is refused by its alg alone,
  /// with one its MAC does not match.
  @Test func algorithmConfusionIsRefused() throws {
    let minted = try PyJWT.minted()
    let jwksOnly = try minted.verifier(secret: false)
    let withSecret = try minted.verifier()
    for name in ["confusion-pem", "confusion-pem-no-kid", "confusion-der", "confusion-pkcs1"] {
      let token = minted.token(name)
      expectRefusal(jwksOnly.verify(token, now: minted.now), .unsupportedAlgorithm, token: token, name)
      expectRefusal(withSecret.verify(token, now: minted.now), .badSignature, token: token, name)
    }
    // And the other way round: an RS256 token where only a secret is configured.
    let secretOnly = try minted.verifier(jwks: false)
    expectRefusal(
      secretOnly.verify(minted.token("rs256"), now: minted.now), .unsupportedAlgorithm,
      token: minted.token("rs256"), "rs256 without a JWKS")
  }

  /// A 10 KB `sub` never reaches the claims under the default 8 KiB limit; with a larger limit it is a bad subject.
  @Test func tenKilobyteSubjectIsRefused() throws {
    let minted = try PyJWT.minted()
    let token = minted.token("sub-10k")
    let result = try minted.verifier().verify(token, now: minted.now)
    expectRefusal(result, .tooLarge, token: token, "sub-10k")
    #expect((try? result.get()) == nil)
    if case .failure(let error) = result {
      #expect(error.message == "the token is \(token.utf8.count) bytes; at most 8192 are accepted")
    }
    let roomy = try minted.verifier(maxTokenBytes: 64 * 1024)
    expectRefusal(roomy.verify(token, now: minted.now), .badSubject, token: token, "sub-10k, 64 KiB limit")
    if case .failure(let error) = roomy.verify(token, now: minted.now) {
      #expect(error.message == "sub is 10240 bytes; an account name is at most 255")
    }
  }

  @Test func messagesSayWhatWasWrong() throws {
    let minted = try PyJWT.minted()
    let verifier = try minted.verifier()
    func message(_ name: String, at now: Double? = nil) -> String {
      guard case .failure(let error) = verifier.verify(minted.token(name), now: now ?? minted.now) else { return "" }
      return error.message
    }
    #expect(message("none") == "alg none (an unsigned token) is never accepted")
    #expect(message("expired") == "the token expired at 2023-11-14T21:13:20Z; now is 2023-11-14T22:13:20Z, leeway 30 s")
    #expect(message("nbf") == "the token is valid from 2023-11-14T22:15:00Z; now is 2023-11-14T22:13:20Z, leeway 30 s")
    #expect(message("no-exp") == "the token has no exp claim: tipsd accepts only tokens that expire")
    #expect(message("wrong-audience") == "the token's audience is not \"tipsd-app\"")
    #expect(message("no-issuer") == "the token has no iss claim; this server accepts issuer \"https://issuer.test/\"")
    #expect(
      message("rs256-stranger-known-kid") == "the signature does not verify with the RSA-2048 key \"rsa-a\" (RS256)")
    #expect(message("es256-stranger") == "the signature does not verify with the EC P-256 key \"ec-a\" (ES256)")
    #expect(
      message("rs256-stranger-unknown-kid").hasPrefix("no key of the JWKS has the token's kid (it holds \"rsa-a\""))
    #expect(
      message("rs256-kid-of-ec-key")
        == "the token's kid names the EC P-256 key \"ec-a\" (ES256), which does not verify RS256")
    #expect(
      message("sub-sql")
        == "sub holds a character outside A-Z a-z 0-9 . _ : @ | + = - (the characters of an account name)")
  }

  /// `exp`: accepted while now < exp + leeway. `nbf`: from nbf − leeway on. `iat`: up to leeway in the future. Each
  /// boundary is tried at its exact instant.
  @Test func leewayBoundariesAtTheExactInstant() throws {
    let minted = try PyJWT.minted()
    let now = minted.now
    let verifier = try minted.verifier()
    func code(_ name: String, _ instant: Double, _ verifier: TokenVerifier) -> AuthError.Code? {
      if case .failure(let error) = verifier.verify(minted.token(name), now: instant) { return error.code }
      return nil
    }
    // exp-now: exp == now.
    #expect(code("exp-now", now + 29.999, verifier) == nil)
    #expect(code("exp-now", now + 30, verifier) == .expired)
    let strict = try minted.verifier(leeway: 0)
    #expect(code("exp-now", now - 0.001, strict) == nil)
    #expect(code("exp-now", now, strict) == .expired)
    // nbf = now + 100.
    #expect(code("nbf", now + 70, verifier) == nil)
    #expect(code("nbf", now + 69.999, verifier) == .notYetValid)
    #expect(code("nbf", now + 100, strict) == nil)
    #expect(code("nbf", now + 99.999, strict) == .notYetValid)
    // iat = now + 100.
    #expect(code("iat-future", now + 70, verifier) == nil)
    #expect(code("iat-future", now + 69.999, verifier) == .notYetValid)
    // expired (exp = now − 1 h) is good an hour earlier.
    #expect(code("expired", now - 3600, verifier) == nil)
    #expect(code("expired", now - 3600 + 30, verifier) == .expired)
  }

  @Test func audienceAndIssuerAreCheckedOnlyWhenConfigured() throws {
    let minted = try PyJWT.minted()
    let open = try minted.verifier(audience: false, issuer: false)
    for name in [
      "wrong-audience", "wrong-audience-array", "no-audience", "wrong-issuer", "no-issuer", "no-optional-claims",
    ] {
      #expect((try? open.verify(minted.token(name), now: minted.now).get()) != nil, "\(name)")
    }
    // Several audiences: any one of them will do.
    let secret = try HMACSecret(bytes: Array(minted.secretFile.dropLast()))
    let several = try TokenVerifier(.init(secrets: [secret], audiences: ["someone-else", "x"]))
    #expect((try? several.verify(minted.token("wrong-audience"), now: minted.now).get()) != nil)
    expectRefusal(
      several.verify(minted.token("hs256"), now: minted.now), .wrongAudience,
      token: minted.token("hs256"), "hs256 for other audiences")
  }

  /// The JWKS from PyJWT's keys: five keys picked by kid, the encryption key and the Ed25519 key skipped and
  /// reported.
  @Test func jwksPicksKeysByKidAndReportsSkippedOnes() throws {
    let minted = try PyJWT.minted()
    let keySet = try JSONWebKeySet(json: minted.jwks, source: "jwks.json")
    #expect(keySet.keys.map(\.keyID) == ["rsa-a", "ec-a", "rsa-b", "ec-384", "ec-521"])
    #expect(
      keySet.keys.map(\.description) == [
        "RSA-2048 key \"rsa-a\" (RS256)", "EC P-256 key \"ec-a\" (ES256)",
        "RSA-2048 key \"rsa-b\" (RS256, RS384, RS512)",
        "EC P-384 key \"ec-384\" (ES384)", "EC P-521 key \"ec-521\" (ES512)",
      ])
    #expect(
      keySet.skipped.map(\.description) == [
        "key 2 (kid \"enc-1\"): use is \"enc\", not \"sig\"",
        "key 3 (kid \"ed-1\"): kty \"OKP\" is not supported (RSA and EC are)",
      ])
    let verifier = try TokenVerifier(.init(keySet: keySet))
    for (name, kid) in [("rs256", "rsa-a"), ("rs256-b", "rsa-b"), ("es256", "ec-a"), ("es384", "ec-384")] {
      #expect((try? verifier.verify(minted.token(name), now: minted.now).get())?.keyID == kid, "\(name)")
    }
  }

  /// Reloading builds a new value: a JWKS without rsa-a refuses rsa-a's tokens by kid, while the verifier built
  /// before keeps accepting them.
  @Test func reloadingIsANewVerifier() throws {
    let minted = try PyJWT.minted()
    let before = try minted.verifier()
    guard case .object(var document) = try JSONParser.parse(minted.jwks), var keys = document["keys"]?.arrayValue else {
      throw TestFailure("jwks.json is not a key set")
    }
    keys.removeFirst()
    document["keys"] = .array(keys)
    let after = try withTemporaryFile(JSONValue.object(document).serialized()) { path in
      try TokenVerifier.load(jwksFile: path, audiences: [minted.audience], issuer: minted.issuer)
    }
    let token = minted.token("rs256")
    expectRefusal(after.verify(token, now: minted.now), .unknownKey, token: token, "rs256 after rsa-a left")
    #expect((try? before.verify(token, now: minted.now).get())?.keyID == "rsa-a")
    #expect((try? after.verify(minted.token("rs256-b"), now: minted.now).get())?.keyID == "rsa-b")
  }

  /// One verifier shared by many threads at once (the keys and HMAC contexts are only read).
  @Test func oneVerifierOnManyThreads() throws {
    let minted = try PyJWT.minted()
    let verifier = try minted.verifier()
    let names = ["hs256", "hs512", "rs256", "es256", "es512", "hs256-wrong-secret", "es256-stranger"]
    let tokens = names.map(minted.token)
    let now = minted.now
    let failures = Mutex(0)
    DispatchQueue.concurrentPerform(iterations: 8) { thread in
      for round in 0..<50 {
        let index = (thread + round) % tokens.count
        let accepted = (try? verifier.verify(tokens[index], now: now).get()) != nil
        let good = !names[index].contains("wrong") && !names[index].contains("stranger")
        if accepted != good { failures.withLock { $0 += 1 } }
      }
    }
    #expect(failures.withLock { $0 } == 0)
  }
}
