import COpenSSL
import TipsAuth
import TipsJSON

// Hosted mode's token verifier (`tipsd-bench auth`): verifications per second of valid HS256, RS256 (2048-bit) and
// ES256 (P-256) tokens, and refusals per second of what a flood of bad tokens looks like — garbage, an unknown kid,
// a bad signature. The cheap refusals (garbage, unknown kid) are also given as a ratio to RS256 verification in the
// same run, and each verification as a ratio to OpenSSL doing the bare signature check, which is the floor.
//
// The keys and tokens are made here with OpenSSL's calls (the bench is not a test: TipsAuthTests' tokens come from
// PyJWT).

func runAuthBenchmarks() throws {
  let now = 1_700_000_000.0
  let secret = Array("a bench secret of at least thirty-two bytes".utf8)
  let rsa = BenchKey.generate("RSA")
  let ec = BenchKey.generate("EC")
  func number(_ key: BenchKey, _ name: String, size: Int? = nil) -> JSONValue {
    .string(Base64URL.encode(key.bigNumber(name, size: size)))
  }
  let jwks = JSONValue.object([
    "keys": [
      ["kty": "RSA", "kid": "bench-rsa", "use": "sig", "alg": "RS256", "n": number(rsa, "n"), "e": number(rsa, "e")],
      [
        "kty": "EC", "kid": "bench-ec", "crv": "P-256", "x": number(ec, "qx", size: 32),
        "y": number(ec, "qy", size: 32),
      ],
    ]
  ]).serialized()
  let verifier = try TokenVerifier(
    .init(
      secrets: [try HMACSecret(bytes: secret)], keySet: try JSONWebKeySet(json: jwks), audiences: ["bench-app"],
      issuer: "https://issuer.bench/"))

  let claims =
    #"{"sub":"auth0|64f0c0ffee","aud":"bench-app","iss":"https://issuer.bench/","iat":1699999940,"exp":1700003600}"#
  func signingInput(_ header: String) -> [UInt8] {
    Array((Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))).utf8)
  }
  func token(_ input: [UInt8], _ signature: [UInt8]) -> String {
    String(decoding: input, as: UTF8.self) + "." + Base64URL.encode(signature)
  }
  let hsInput = signingInput(#"{"alg":"HS256","typ":"JWT"}"#)
  let rsInput = signingInput(#"{"alg":"RS256","typ":"JWT","kid":"bench-rsa"}"#)
  let esInput = signingInput(#"{"alg":"ES256","typ":"JWT","kid":"bench-ec"}"#)
  let hsMAC = hmacSHA256(secret, hsInput)
  let rsSignature = rsa.sign(rsInput)
  let hs256 = token(hsInput, hsMAC)
  let rs256 = token(rsInput, rsSignature)
  let esDER = ec.sign(esInput)
  let es256 = token(esInput, BenchKey.joseSignature(der: esDER))
  var forged = rsSignature
  forged[forged.count / 2] ^= 1
  let badSignature = token(rsInput, forged)
  let unknownKid = token(signingInput(#"{"alg":"RS256","typ":"JWT","kid":"rotated-away"}"#), rsSignature)
  let garbage = "eyJhbGciOiJIUzI1NiJ9.not-a-payload!.x"

  func verifies(_ token: String, accepted: Bool) -> () -> Bool {
    {
      let result = verifier.verify(token, now: now)
      if case .success = result { return accepted }
      return !accepted
    }
  }
  // The floor: OpenSSL alone checking the same signatures, no parsing, no claims.
  guard let sha256 = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("no SHA256 in OpenSSL") }
  defer { EVP_MD_free(sha256) }
  let runs: [(String, () -> Bool)] = [
    ("hs256", verifies(hs256, accepted: true)),
    ("rs256", verifies(rs256, accepted: true)),
    ("es256", verifies(es256, accepted: true)),
    ("garbage", verifies(garbage, accepted: false)),
    ("unknown kid", verifies(unknownKid, accepted: false)),
    ("bad signature", verifies(badSignature, accepted: false)),
    ("bare rs256", { rsa.verify(rsInput, rsSignature, digest: sha256) }),
    ("bare es256", { ec.verify(esInput, esDER, digest: sha256) }),
  ]
  // Round-robin, best of three: a busy machine slows every figure alike, so the ratios hold.
  var best = [Double](repeating: 0, count: runs.count)
  for _ in 0..<3 {
    for (index, (label, body)) in runs.enumerated() {
      let perSecond = timedRate(body)
      precondition(perSecond > 0, "\(label): not the expected answer")
      best[index] = max(best[index], perSecond)
    }
  }
  let (hsRate, rsRate, esRate, garbageRate) = (best[0], best[1], best[2], best[3])
  let (unknownKidRate, badSignatureRate, bareRSA, bareEC) = (best[4], best[5], best[6], best[7])

  EngineBench.report("auth.hs256_verify_per_sec", hsRate.rounded())
  EngineBench.report("auth.rs256_verify_per_sec", rsRate.rounded())
  EngineBench.report("auth.es256_verify_per_sec", esRate.rounded())
  EngineBench.report("auth.garbage_reject_per_sec", garbageRate.rounded())
  EngineBench.report("auth.unknown_kid_reject_per_sec", unknownKidRate.rounded())
  EngineBench.report("auth.bad_signature_rs256_reject_per_sec", badSignatureRate.rounded())
  EngineBench.report("auth.garbage_vs_rs256_ratio", garbageRate / rsRate)
  EngineBench.report("auth.unknown_kid_vs_rs256_ratio", unknownKidRate / rsRate)
  EngineBench.report("auth.rs256_vs_bare_openssl_ratio", rsRate / bareRSA)
  EngineBench.report("auth.es256_vs_bare_openssl_ratio", esRate / bareEC)
}

/// Calls `body` in batches for at least half a second; returns calls per second, or 0 if any call returned false.
private func timedRate(_ body: () -> Bool) -> Double {
  for _ in 0..<100 where !body() { return 0 }  // warm-up
  var calls = 0
  let start = monotonic()
  var elapsed = 0.0
  while elapsed < 0.5 {
    for _ in 0..<100 where !body() { return 0 }
    calls += 100
    elapsed = monotonic() - start
  }
  return Double(calls) / elapsed
}

private func hmacSHA256(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
  var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
  var length = 0
  guard EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, key, key.count, data, data.count, &mac, mac.count, &length) != nil
  else { fatalError("HMAC failed") }
  return Array(mac.prefix(length))
}

/// A key pair made by OpenSSL for the bench.
private struct BenchKey {
  let key: OpaquePointer

  /// A 2048-bit RSA or a P-256 EC key.
  static func generate(_ type: String) -> BenchKey {
    guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else { fatalError("no \(type) in OpenSSL") }
    defer { EVP_PKEY_CTX_free(context) }
    guard EVP_PKEY_keygen_init(context) == 1 else { fatalError("EVP_PKEY_keygen_init \(type)") }
    let sized =
      type == "RSA"
      ? EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048) : EVP_PKEY_CTX_set_group_name(context, "P-256")
    var key: OpaquePointer?
    guard sized == 1, EVP_PKEY_generate(context, &key) == 1, let key else {
      fatalError("cannot generate a \(type) key")
    }
    return BenchKey(key: key)
  }

  /// A big-endian number of the key (`n`, `e`, `qx`, `qy`), left-padded to `size` bytes if given.
  func bigNumber(_ name: String, size: Int? = nil) -> [UInt8] {
    var number: OpaquePointer?
    guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let number else { fatalError("no \(name) in the key") }
    defer { BN_free(number) }
    var bytes = [UInt8](repeating: 0, count: size ?? (Int(BN_num_bits(number)) + 7) / 8)
    guard BN_bn2binpad(number, &bytes, Int32(bytes.count)) == Int32(bytes.count) else { fatalError("\(name) too big") }
    return bytes
  }

  /// The SHA-256 signature of `data` as OpenSSL makes it (PKCS #1 v1.5 for RSA, DER for ECDSA).
  func sign(_ data: [UInt8]) -> [UInt8] {
    guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new") }
    defer { EVP_MD_CTX_free(context) }
    var length = 0
    guard EVP_DigestSignInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1,
      EVP_DigestSign(context, nil, &length, data, data.count) == 1
    else { fatalError("EVP_DigestSign") }
    var signature = [UInt8](repeating: 0, count: length)
    guard EVP_DigestSign(context, &signature, &length, data, data.count) == 1 else { fatalError("EVP_DigestSign") }
    return Array(signature.prefix(length))
  }

  /// An ES256 signature as JOSE writes it (`r ‖ s`, 32 bytes each) from OpenSSL's DER.
  static func joseSignature(der: [UInt8]) -> [UInt8] {
    let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
      var cursor = buffer.baseAddress
      return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
    }
    guard let signature else { fatalError("d2i_ECDSA_SIG") }
    defer { ECDSA_SIG_free(signature) }
    var raw = [UInt8](repeating: 0, count: 64)
    raw.withUnsafeMutableBufferPointer { buffer in
      _ = BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32)
      _ = BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32)
    }
    return raw
  }

  /// OpenSSL alone verifying a SHA-256 signature (RS256, or ES256 in DER), with the hash fetched once (as TipsAuth
  /// does).
  func verify(_ data: [UInt8], _ signature: [UInt8], digest: OpaquePointer) -> Bool {
    guard let context = EVP_MD_CTX_new() else { return false }
    defer { EVP_MD_CTX_free(context) }
    return EVP_DigestVerifyInit(context, nil, digest, nil, key) == 1
      && EVP_DigestVerify(context, signature, signature.count, data, data.count) == 1
  }
}
