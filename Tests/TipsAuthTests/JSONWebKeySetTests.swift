import Testing
import TipsAuth
import TipsJSON

/// The error loading `json` gives (as `jwks.json`), or nil if it loads.
private func loadError(_ json: String) -> String? {
  loadError(Array(json.utf8))
}

private func loadError(_ bytes: [UInt8]) -> String? {
  do {
    _ = try JSONWebKeySet(json: bytes, source: "jwks.json")
    return nil
  } catch {
    return error.description
  }
}

private func keySet(_ keys: [JSONValue]) -> [UInt8] {
  JSONValue.object(["keys": .array(keys)]).serialized()
}

/// A JWK with members replaced (`.null` removes one).
private func edited(_ key: JSONObject, _ changes: [String: JSONValue]) -> JSONValue {
  var key = key
  for (name, value) in changes {
    if value == .null { _ = key.removeValue(forKey: name) } else { key[name] = value }
  }
  return .object(key)
}

@Suite struct JSONWebKeySetShapeTests {
  @Test(arguments: [
    ("{", "jwks.json: not JSON (invalid JSON at byte 1: unexpected end of input)"),
    ("[]", "jwks.json: expected a JSON object with a \"keys\" array, found array"),
    ("{}", "jwks.json: keys: missing (a JWKS is {\"keys\": [...]})"),
    (#"{"keys": {}}"#, "jwks.json: keys: expected an array, found object"),
    (#"{"keys": []}"#, "jwks.json: keys: no key tipsd can verify with"),
    (#"{"keys": [1]}"#, "jwks.json: key 0: expected a JSON object, found number"),
    (#"{"keys": [{"kid": "a"}]}"#, "jwks.json: key 0 (kid \"a\"): kty: missing"),
    (#"{"keys": [{"kid": 7, "kty": "RSA"}]}"#, "jwks.json: key 0: kid: expected a string, found number"),
    (
      #"{"keys": [{"kty": "RSA", "kid": "a", "use": 1}]}"#,
      "jwks.json: key 0 (kid \"a\"): use: expected a string, found number"
    ),
    (
      #"{"keys": [{"kty": "RSA", "kid": "a", "key_ops": "verify"}]}"#,
      "jwks.json: key 0 (kid \"a\"): key_ops: expected an array of strings"
    ),
    (
      #"{"keys": [{"kty": "oct", "kid": "s", "k": "c2VjcmV0"}, {"kty": "OKP", "crv": "Ed25519", "x": "AA"}]}"#,
      "jwks.json: keys: no key tipsd can verify with (skipped: key 0 (kid \"s\"): kty \"oct\" (a shared secret) is not "
        + "read from a JWKS: use --jwt-secret-file; key 1: kty \"OKP\" is not supported (RSA and EC are))"
    ),
  ])
  func refusesDocumentsThatAreNotKeySets(json: String, error: String) {
    #expect(loadError(json) == error)
  }

  @Test func refusesAnOversizedFile() {
    let huge =
      Array(#"{"keys": [], "pad": ""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 1 << 20) + Array(#""}"#.utf8)
    #expect(loadError(huge) == "jwks.json: \(huge.count) bytes; a JWKS file is at most 1048576 bytes")
  }

  @Test func missingFileIsNamed() {
    #expect(
      throws: AuthConfigurationError(
        file: "/nonexistent/jwks.json", "cannot read the JWKS file: No such file or directory")
    ) {
      try JSONWebKeySet.load(file: "/nonexistent/jwks.json")
    }
  }
}

@Suite(.enabled(if: PyJWT.available, PyJWT.skipReason))
struct JSONWebKeySetKeyTests {
  /// PyJWT's rsa-a and ec-a as JWK objects.
  static func keys() throws -> (rsa: JSONObject, ec: JSONObject) {
    let document = try JSONParser.parse(try PyJWT.minted().jwks)
    let keys = document["keys"]?.arrayValue ?? []
    guard let rsa = keys.first?.objectValue, let ec = keys.dropFirst().first?.objectValue,
      rsa["kty"] == "RSA", ec["kty"] == "EC"
    else { throw JWKSFixtureError() }
    return (rsa, ec)
  }

  struct JWKSFixtureError: Error {}

  @Test func rsaKeyMembersAreCheckedOneByOne() throws {
    let (rsa, _) = try Self.keys()
    let prefix = "jwks.json: key 0 (kid \"rsa-a\"): "
    let cases: [([String: JSONValue], String)] = [
      (["n": .null], "n: missing"),
      (["n": 5], "n: expected a string, found number"),
      (["n": "abc+def"], "n: not base64url"),
      (["e": ""], "e: empty"),
      (["e": "AQAB$"], "e: not base64url"),
      (["e": "AQIDBAUGBwgJ"], "e: not an RSA exponent (an odd number from 3, at most 64 bits)"),
      (["e": "AQAA"], "e: not an RSA exponent (an odd number from 3, at most 64 bits)"),
      (["e": "AQ"], "e: not an RSA exponent (an odd number from 3, at most 64 bits)"),
      (["e": "AAAAAQ"], "e: not an RSA exponent (an odd number from 3, at most 64 bits)"),
      (["n": "AQAB"], "n: a 17-bit modulus; RSA keys need at least 2048 bits"),
      (["alg": "ES256"], "alg: ES256 does not go with kty RSA"),
      (["alg": "HS256"], "alg: HS256 does not go with kty RSA"),
      (["d": "AQAB"], "d: a private key member: a JWKS must hold public keys only (remove it, and replace the key)"),
      (["qi": "AQAB"], "qi: a private key member: a JWKS must hold public keys only (remove it, and replace the key)"),
      (["kid": ""], "kid: empty"),
    ]
    for (changes, message) in cases {
      let kid = changes["kid"]?.stringValue ?? "rsa-a"
      let expected = "jwks.json: key 0 (kid \"\(kid)\"): " + message
      #expect(loadError(keySet([edited(rsa, changes)])) == expected, "\(changes)")
    }
    #expect(
      loadError(keySet([edited(rsa, ["kid": .null])]))
        == "jwks.json: key 0: kid: missing (tokens choose their key by kid)")
    // An even modulus: n with its last byte's low bit cleared.
    var n = Base64URL.decode(rsa["n"]?.stringValue ?? "") ?? []
    n[n.count - 1] &= 0xFE
    #expect(
      loadError(keySet([edited(rsa, ["n": .string(Base64URL.encode(n))])])) == prefix
        + "n: an even modulus is not an RSA key")
  }

  @Test func aSmallRSAKeyIsRefused() throws {
    let small = try JSONParser.parse(try PyJWT.minted().smallRSAKey)
    #expect(
      loadError(keySet([small]))
        == "jwks.json: key 0 (kid \"rsa-small\"): n: a 1024-bit modulus; RSA keys need at least 2048 bits")
  }

  @Test func ecKeyMembersAreCheckedOneByOne() throws {
    let (_, ec) = try Self.keys()
    let x = Base64URL.decode(ec["x"]?.stringValue ?? "") ?? []
    var y = Base64URL.decode(ec["y"]?.stringValue ?? "") ?? []
    #expect(x.count == 32 && y.count == 32)
    y[31] ^= 1
    let cases: [([String: JSONValue], String)] = [
      (["crv": .null], "crv: missing"),
      (["x": .string(Base64URL.encode(x.dropLast()))], "x: 31 bytes; P-256 coordinates are 32"),
      (["y": .string(Base64URL.encode(x + [0]))], "y: 33 bytes; P-256 coordinates are 32"),
      (["x": "!!"], "x: not base64url"),
      (["alg": "ES384"], "alg: ES384 does not go with crv P-256 (which signs ES256)"),
      (["alg": "RS256"], "alg: RS256 does not go with crv P-256 (which signs ES256)"),
      (["d": "AQAB"], "d: a private key member: a JWKS must hold public keys only (remove it, and replace the key)"),
    ]
    for (changes, message) in cases {
      #expect(loadError(keySet([edited(ec, changes)])) == "jwks.json: key 0 (kid \"ec-a\"): " + message, "\(changes)")
    }
    let offCurve = loadError(keySet([edited(ec, ["y": .string(Base64URL.encode(y))])])) ?? ""
    #expect(
      offCurve.hasPrefix("jwks.json: key 0 (kid \"ec-a\"): x and y are not a public key on P-256 (OpenSSL: "),
      "\(offCurve)")
  }

  @Test func duplicateKidIsRefused() throws {
    let (rsa, ec) = try Self.keys()
    #expect(
      loadError(keySet([.object(rsa), edited(ec, ["kid": "rsa-a"])]))
        == "jwks.json: key 1 (kid \"rsa-a\"): kid: also the kid of key 0; each key needs its own")
  }

  @Test func keysForOtherUsesOrAlgorithmsAreSkippedAndReported() throws {
    let (rsa, ec) = try Self.keys()
    let set = try JSONWebKeySet(
      json: keySet([
        edited(rsa, ["use": "enc", "kid": "e1"]),
        edited(rsa, ["key_ops": ["encrypt"], "kid": "e2"]),
        edited(rsa, ["alg": "PS256", "kid": "p1"]),
        edited(ec, ["crv": "secp256k1", "kid": "k1"]),
        .object(ec),
        edited(rsa, ["alg": .null, "use": .null, "key_ops": .null, "x5c": ["MIIB"], "kid": "plain"]),
      ]), source: "jwks.json")
    #expect(
      set.keys.map(\.description) == ["EC P-256 key \"ec-a\" (ES256)", "RSA-2048 key \"plain\" (RS256, RS384, RS512)"])
    #expect(
      set.skipped.map(\.description) == [
        "key 0 (kid \"e1\"): use is \"enc\", not \"sig\"",
        "key 1 (kid \"e2\"): key_ops does not include \"verify\"",
        "key 2 (kid \"p1\"): alg \"PS256\" is not supported (RS256, RS384, RS512, ES256, ES384, ES512 are)",
        "key 3 (kid \"k1\"): crv \"secp256k1\" is not supported (P-256, P-384 and P-521 are)",
      ])
    #expect(set.key(id: "plain") != nil && set.key(id: "e1") == nil)
  }

  /// Some JWKS writers pad `n`, `e`, `x` and `y`: accepted there (never in tokens).
  @Test func paddedNumbersAreAccepted() throws {
    let (rsa, _) = try Self.keys()
    let minted = try PyJWT.minted()
    let n = rsa["n"]?.stringValue ?? ""
    let padded = n + String(repeating: "=", count: (4 - n.count % 4) % 4)
    #expect(padded != n)
    let set = try JSONWebKeySet(json: keySet([edited(rsa, ["n": .string(padded), "e": "AQAB"])]))
    let verifier = try TokenVerifier(.init(keySet: set))
    #expect((try? verifier.verify(minted.token("rs256"), now: minted.now).get())?.keyID == "rsa-a")
  }
}
