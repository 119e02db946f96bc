// Every call into OpenSSL's libcrypto lives here: keys from a JWK's numbers, HMAC, and signature checks. No
// cryptography is computed in Swift; this file only moves bytes in and out of EVP.
internal import COpenSSL

/// OpenSSL objects fetched once and shared by every thread. Fetching explicitly, once, is OpenSSL 3's advice for
/// speed (the implicit fetch behind `EVP_sha256()` repeats a locked lookup on every call).
///
/// `@unchecked Sendable`: the pointers are never freed or modified after the fetch, and OpenSSL documents fetched
/// algorithm objects as safe to share between threads.
struct FetchedAlgorithms: @unchecked Sendable {
  let sha256: OpaquePointer
  let sha384: OpaquePointer
  let sha512: OpaquePointer
  let hmac: OpaquePointer

  static let shared = FetchedAlgorithms()

  private init() {
    func required(_ pointer: OpaquePointer?, _ name: String) -> OpaquePointer {
      guard let pointer else { preconditionFailure("OpenSSL has no \(name) (is the default provider missing?)") }
      return pointer
    }
    sha256 = required(EVP_MD_fetch(nil, "SHA256", nil), "SHA256")
    sha384 = required(EVP_MD_fetch(nil, "SHA384", nil), "SHA384")
    sha512 = required(EVP_MD_fetch(nil, "SHA512", nil), "SHA512")
    hmac = required(EVP_MAC_fetch(nil, "HMAC", nil), "HMAC")
  }

  /// The fetched hash an algorithm uses.
  func digest(for algorithm: JWTAlgorithm) -> OpaquePointer {
    switch algorithm {
    case .hs256, .rs256, .es256: sha256
    case .hs384, .rs384, .es384: sha384
    case .hs512, .rs512, .es512: sha512
    }
  }
}

/// An HMAC context keyed with one secret for one hash. Each verification works on a copy (`EVP_MAC_CTX_dup`), so
/// the key is set up once per secret, not once per token.
///
/// `@unchecked Sendable`: after `init` the template is only read (`EVP_MAC_CTX_dup` copies it without changing it),
/// so several threads may verify with it at once.
final class HMACTemplate: @unchecked Sendable {
  private let context: OpaquePointer

  /// Keys a context; nil if OpenSSL refuses (it does not for a non-empty secret).
  init?(secret: [UInt8], algorithm: JWTAlgorithm) {
    precondition(!secret.isEmpty && algorithm.family == .hmac, "HMAC templates need a secret and an HS algorithm")
    guard let context = EVP_MAC_CTX_new(FetchedAlgorithms.shared.hmac) else { return nil }
    var digestName = Array(algorithm.digestName.utf8CString)
    let initialized = OSSL_MAC_PARAM_DIGEST.withCString { key in
      digestName.withUnsafeMutableBufferPointer { name in
        var parameters = [OSSL_PARAM_construct_utf8_string(key, name.baseAddress, 0), OSSL_PARAM_construct_end()]
        return secret.withUnsafeBufferPointer { EVP_MAC_init(context, $0.baseAddress, $0.count, &parameters) }
      }
    }
    guard initialized == 1 else {
      EVP_MAC_CTX_free(context)
      ERR_clear_error()
      return nil
    }
    self.context = context
  }

  deinit { EVP_MAC_CTX_free(context) }

  /// Whether `signature` is this secret's HMAC of `input`, compared in constant time (`CRYPTO_memcmp`).
  func verify(_ input: UnsafeRawBufferPointer, signature: [UInt8]) -> Bool {
    guard let copy = EVP_MAC_CTX_dup(context) else { return false }
    defer { EVP_MAC_CTX_free(copy) }
    var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length = 0
    guard EVP_MAC_update(copy, input.baseAddress, input.count) == 1,
      EVP_MAC_final(copy, &mac, &length, mac.count) == 1
    else {
      ERR_clear_error()
      return false
    }
    guard length == signature.count else { return false }
    return CRYPTO_memcmp(mac, signature, length) == 0
  }
}

/// An OpenSSL public key (`EVP_PKEY`), freed with the last reference.
///
/// `@unchecked Sendable`: never modified after it is built, and OpenSSL allows one `EVP_PKEY` to be used by several
/// threads at once, each with its own `EVP_MD_CTX`.
final class EVPPublicKey: @unchecked Sendable {
  private let pointer: OpaquePointer

  private init(_ pointer: OpaquePointer) { self.pointer = pointer }

  deinit { EVP_PKEY_free(pointer) }

  /// The key's size in bits (the modulus for RSA, the group order for EC).
  var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

  /// The size of the key's signatures in bytes (the modulus length for RSA; the DER maximum for EC).
  var signatureSize: Int { Int(EVP_PKEY_get_size(pointer)) }

  /// An RSA public key from a JWK's big-endian `n` and `e`.
  ///
  /// Not put through `EVP_PKEY_public_check`: for RSA it runs a randomised primality test, which on an odd modulus
  /// that is not a product of two primes answers differently from one run to the next (found by the `jwks` fuzz
  /// target) — loading a file must not. The caller checks size and parity; a bogus modulus only verifies nothing.
  static func rsa(modulus: [UInt8], exponent: [UInt8]) -> Result<EVPPublicKey, OpenSSLFailure> {
    ERR_clear_error()
    guard let builder = OSSL_PARAM_BLD_new() else { return .failure(.last("OSSL_PARAM_BLD_new")) }
    defer { OSSL_PARAM_BLD_free(builder) }
    // The builder keeps the pointers it is given (names, numbers, buffers) until OSSL_PARAM_BLD_to_param, which
    // fromParameters calls: everything stays alive around that call.
    let n = BN_bin2bn(modulus, Int32(modulus.count), nil)
    let e = BN_bin2bn(exponent, Int32(exponent.count), nil)
    defer {
      BN_free(n)
      BN_free(e)
    }
    guard let n, let e else { return .failure(.last("BN_bin2bn")) }
    return OSSL_PKEY_PARAM_RSA_N.withCString { nName in
      OSSL_PKEY_PARAM_RSA_E.withCString { eName in
        guard OSSL_PARAM_BLD_push_BN(builder, nName, n) == 1, OSSL_PARAM_BLD_push_BN(builder, eName, e) == 1 else {
          return .failure(.last("OSSL_PARAM_BLD_push_BN"))
        }
        return fromParameters(builder, type: "RSA", checkPublicKey: false)
      }
    }
  }

  /// An EC public key on `curve` from a JWK's big-endian `x` and `y` (each exactly the curve's coordinate size),
  /// refused by OpenSSL unless the point is on the curve.
  static func ec(curve: ECCurve, x: [UInt8], y: [UInt8]) -> Result<EVPPublicKey, OpenSSLFailure> {
    precondition(x.count == curve.coordinateSize && y.count == curve.coordinateSize)
    ERR_clear_error()
    guard let builder = OSSL_PARAM_BLD_new() else { return .failure(.last("OSSL_PARAM_BLD_new")) }
    defer { OSSL_PARAM_BLD_free(builder) }
    // SEC 1's uncompressed point: 0x04 ‖ x ‖ y.
    let point: [UInt8] = [0x04] + x + y
    // (As for RSA: every pointer stays alive until fromParameters has built the parameters.)
    return OSSL_PKEY_PARAM_GROUP_NAME.withCString { groupName in
      OSSL_PKEY_PARAM_PUB_KEY.withCString { pointName in
        curve.groupName.withCString { group in
          point.withUnsafeBytes { point in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, groupName, group, 0) == 1,
              OSSL_PARAM_BLD_push_octet_string(builder, pointName, point.baseAddress, point.count) == 1
            else { return .failure(.last("OSSL_PARAM_BLD_push")) }
            return fromParameters(builder, type: "EC", checkPublicKey: true)
          }
        }
      }
    }
  }

  /// Builds the key; `checkPublicKey`: and has OpenSSL check it (for EC: the point is on the curve).
  private static func fromParameters(
    _ builder: OpaquePointer, type: String, checkPublicKey: Bool
  ) -> Result<EVPPublicKey, OpenSSLFailure> {
    guard let parameters = OSSL_PARAM_BLD_to_param(builder) else { return .failure(.last("OSSL_PARAM_BLD_to_param")) }
    defer { OSSL_PARAM_free(parameters) }
    guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
      return .failure(.last("EVP_PKEY_CTX_new_from_name"))
    }
    defer { EVP_PKEY_CTX_free(context) }
    var key: OpaquePointer?
    guard EVP_PKEY_fromdata_init(context) == 1,
      EVP_PKEY_fromdata(context, &key, tipsd_evp_pkey_public_key_selection(), parameters) == 1, let key
    else { return .failure(.last("EVP_PKEY_fromdata")) }
    let built = EVPPublicKey(key)
    guard checkPublicKey else { return .success(built) }
    guard let checking = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
      return .failure(.last("EVP_PKEY_CTX_new_from_pkey"))
    }
    defer { EVP_PKEY_CTX_free(checking) }
    guard EVP_PKEY_public_check(checking) == 1 else { return .failure(.last("EVP_PKEY_public_check")) }
    return .success(built)
  }

  /// Whether `signature` (DER for ECDSA, the raw block for RSA PKCS #1 v1.5) signs `input` with this key and hash.
  func verify(_ input: UnsafeRawBufferPointer, signature: [UInt8], digest: OpaquePointer) -> Bool {
    guard let context = EVP_MD_CTX_new() else { return false }
    defer { EVP_MD_CTX_free(context) }
    let verified =
      EVP_DigestVerifyInit(context, nil, digest, nil, pointer) == 1
      && EVP_DigestVerify(context, signature, signature.count, input.baseAddress, input.count) == 1
    if !verified { ERR_clear_error() }
    return verified
  }
}

/// JOSE's ECDSA signature (RFC 7518 §3.4: `r ‖ s`, each `size` bytes, big-endian) as the DER `ECDSA-Sig-Value`
/// OpenSSL verifies; nil if the length is not `2 × size`.
func ecdsaSignatureDER(raw: [UInt8], size: Int) -> [UInt8]? {
  guard raw.count == 2 * size, let signature = ECDSA_SIG_new() else { return nil }
  defer { ECDSA_SIG_free(signature) }
  let (r, s) = raw.withUnsafeBufferPointer {
    (BN_bin2bn($0.baseAddress, Int32(size), nil), BN_bin2bn($0.baseAddress! + size, Int32(size), nil))
  }
  guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
    BN_free(r)
    BN_free(s)
    return nil
  }
  // ECDSA_SIG_set0 took r and s: they are freed with the signature.
  let length = i2d_ECDSA_SIG(signature, nil)
  guard length > 0 else { return nil }
  var der = [UInt8](repeating: 0, count: Int(length))
  let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
    var cursor = buffer.baseAddress
    return i2d_ECDSA_SIG(signature, &cursor)
  }
  return written == length ? der : nil
}

/// What OpenSSL said when it refused to build a key: the call and the first queued error's reason.
struct OpenSSLFailure: Error {
  let message: String

  /// The call that failed and OpenSSL's reason, emptying OpenSSL's error queue.
  static func last(_ call: String) -> OpenSSLFailure {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0, let reason = ERR_reason_error_string(code) else { return OpenSSLFailure(message: call) }
    return OpenSSLFailure(message: "\(call): \(String(cString: reason))")
  }
}
