// The invariants of the `jwt` and `jwks` fuzz targets (Fuzz/harness/JWTHarness.swift, JWKSHarness.swift), compiled
// into the harnesses by Fuzz/build.sh and replayed over the committed seeds by TipsAuthTests (FuzzSeedTests).
import COpenSSL
import TipsAuth
import TipsJSON

enum AuthFuzzOracle {
  /// The instant every input is verified at.
  static let now: Double = 1_700_000_000
  /// The harness's HS256 secret: inputs whose first byte is odd are signed with it before verification.
  static let secret = Array("fuzz-secret-0123456789abcdefghijklmnopqrstuvwxyz".utf8)
  /// The harness's public keys (kid `fuzz-rsa`, RSA-2048; `fuzz-ec`, P-256), made once with PyJWT for the seeds in
  /// Fuzz/corpus/jwt (their private keys were not kept).
  static let jwks =
    #"{"keys":[{"kty":"RSA","n":"wd51oSIfZmKhTJBPzbIuEViTtQJkhv5rpdPWrR0D6Mzjjbo1NogHmevDmcKXG9xqcoVTe7kpTCmSyZVm8NJKGZP-6a-U5uUH_i6ZMuLQOaz1c8Un8Rbyjg5kHlklhz3wlAa9rxHU_Rc34SZQ2PikPaQ0iYdvYDnnf4FCBLxvUO6TXIagInmpnnmDRx9x9XceBmubc47hOJzfbE7IKotLbMtQhCr8dHDZrjPYPDR-x4ix1lt7hL2fVeaPpXQLFeXXpM5THuymshsDzuXjqwpaQ1C6FCQ489tu0_1dyKeUcthFqZOynAh5R0x-pkd7RxgSFFNy1e6z4DWU_lDcINVpqQ","e":"AQAB","kid":"fuzz-rsa","use":"sig","alg":"RS256"},{"kty":"EC","crv":"P-256","x":"3K27rEtUmejRxqsooRl_2fA5F3Y_p2XxJ9pQyArLsCQ","y":"SyFYmpiIu9BJoh8B-3Jos_sT4tHaWRZRvrfTW4OJm1U","kid":"fuzz-ec","use":"sig"}]}"#

  static let verifier: TokenVerifier = {
    do {
      let keySet = try JSONWebKeySet(json: Array(jwks.utf8), source: "fuzz")
      return try TokenVerifier(
        .init(
          secrets: [try HMACSecret(bytes: secret)], keySet: keySet, audiences: ["fuzz-app"],
          issuer: "https://fuzz.test/"))
    } catch {
      preconditionFailure("the fuzz verifier: \(error)")
    }
  }()

  /// The token an input stands for: byte 0 even — the rest as it is; odd — the rest is `header.payload` and gets
  /// an HS256 signature by OpenSSL's HMAC with secret, so the fuzzer reaches the payload and claims checks.
  static func token(_ input: [UInt8]) -> [UInt8] {
    guard let mode = input.first else { return [] }
    let rest = Array(input.dropFirst())
    guard mode & 1 == 1 else { return rest }
    var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length = 0
    guard
      EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, secret, secret.count, rest, rest.count, &mac, mac.count, &length)
        != nil
    else { return rest }
    return rest + Array(".".utf8) + Array(Base64URL.encode(mac.prefix(length)).utf8)
  }

  /// Verifies the token an input stands for and checks what any answer must satisfy.
  static func checkToken(_ input: [UInt8], _ check: (Bool, @autoclosure () -> String) -> Void) {
    let token = token(input)
    let result = verifier.verify(token, now: now)
    let text = String(decoding: token, as: UTF8.self)
    if Array(text.utf8) == token {
      check(verifier.verify(text, now: now) == result, "verify(String) and verify([UInt8]) disagree")
    }
    switch result {
    case .success(let verified):
      check(Subject.problem(verified.subject) == nil, "an accepted token has a bad subject")
      check(verified.acceptedUntil > now, "an accepted token has expired")
      check(verified.audience.contains("fuzz-app"), "an accepted token is for another audience")
      check(verified.issuer == "https://fuzz.test/", "an accepted token has another issuer")
      check((verified.algorithm.family == .hmac) == (verified.keyID == nil), "key id and algorithm disagree")
      check(token.count <= 8192, "an accepted token is over the size limit")
    case .failure(let error):
      check(!error.message.isEmpty, "a refusal without a message")
      // The message repeats no part of the token (8 bytes or longer). A part may still occur in it by coincidence
      // with the verifier's own words (a payload `signature`, a kid of the JWKS): then the same token with that part
      // replaced by other bytes gets a message that still holds it.
      let message = Array(error.message.utf8)
      let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
      for (index, part) in parts.enumerated() where part.count >= 8 && contains(message, part) {
        var other = parts
        let filler = part.first == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        other[index] = [UInt8](repeating: filler, count: part.count)
        let otherToken = Array(other.joined(separator: [UInt8(ascii: ".")]))
        guard case .failure(let otherError) = verifier.verify(otherToken, now: now),
          contains(Array(otherError.message.utf8), part)
        else {
          check(false, "the message repeats part \(index) of the token: \(error.message)")
          continue
        }
      }
    }
  }

  /// Parses an input as a JWKS and checks what a loaded set must satisfy.
  static func checkJWKS(_ input: [UInt8], _ check: (Bool, @autoclosure () -> String) -> Void) {
    let first = Result { () throws(AuthConfigurationError) in try JSONWebKeySet(json: input, source: "fuzz") }
    let second = Result { () throws(AuthConfigurationError) in try JSONWebKeySet(json: input, source: "fuzz") }
    switch (first, second) {
    case (.success(let set), .success(let again)):
      check(!set.keys.isEmpty, "a key set without keys loaded")
      check(Set(set.keys.map(\.keyID)).count == set.keys.count, "two keys share a kid")
      check(set.keys.map(\.description) == again.keys.map(\.description), "loading is not deterministic")
      for key in set.keys {
        check(!key.keyID.isEmpty && set.key(id: key.keyID)?.keyID == key.keyID, "a key is not found by its kid")
        check(!key.algorithms.isEmpty && key.algorithms.allSatisfy { $0.family != .hmac }, "a key verifies HS*")
      }
      if let verifier = try? TokenVerifier(.init(keySet: set)), let token = set.keys.first.map(forgedToken) {
        check((try? verifier.verify(token, now: now).get()) == nil, "a forged token verified")
      }
    case (.failure(let error), .failure(let again)):
      check(error == again, "loading is not deterministic")
      check(!error.message.isEmpty && error.file == "fuzz", "an error without a message or file")
    default:
      check(false, "loading is not deterministic")
    }
  }

  /// A token naming `key`, with a signature of the right size that no one made.
  private static func forgedToken(_ key: JSONWebKey) -> String {
    let algorithm = JWTAlgorithm.allCases.first(where: key.algorithms.contains)!
    let header = JSONValue.object(["alg": .string(algorithm.rawValue), "kid": .string(key.keyID)]).serialized()
    let payload = Array(#"{"sub":"a","exp":4102444800}"#.utf8)
    let size: Int
    switch key.kind {
    case .rsa(let bits): size = (bits + 7) / 8
    case .ec(let curve): size = ["P-256": 64, "P-384": 96, "P-521": 132][curve.rawValue] ?? 64
    }
    return Base64URL.encode(header) + "." + Base64URL.encode(payload) + "."
      + Base64URL.encode([UInt8](repeating: 1, count: size))
  }

  private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    for start in 0...(haystack.count - needle.count)
    where haystack[start..<(start + needle.count)].elementsEqual(needle) {
      return true
    }
    return false
  }
}
