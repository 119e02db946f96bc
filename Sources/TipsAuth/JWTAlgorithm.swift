/// A JWS algorithm (RFC 7518 §3) that TipsAuth verifies. The key decides which of them a token may use: an HMAC
/// secret verifies only HS*, an RSA key only RS*, an EC key only the ES* of its curve. `none` and everything else
/// (PS*, EdDSA, …) are refused.
public enum JWTAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  case hs256 = "HS256", hs384 = "HS384", hs512 = "HS512"
  case rs256 = "RS256", rs384 = "RS384", rs512 = "RS512"
  case es256 = "ES256", es384 = "ES384", es512 = "ES512"

  /// The kind of key an algorithm needs.
  public enum Family: String, Sendable, Hashable {
    /// A shared secret (`--jwt-secret-file`): HS256, HS384, HS512.
    case hmac = "HMAC"
    /// An RSA public key (a JWKS key with `kty: RSA`): RS256, RS384, RS512 (PKCS #1 v1.5).
    case rsa = "RSA"
    /// An EC public key (a JWKS key with `kty: EC`): ES256 on P-256, ES384 on P-384, ES512 on P-521.
    case ecdsa = "EC"
  }

  /// The algorithm's name as in a JOSE header (`HS256`).
  public var description: String { rawValue }

  /// The key kind the algorithm needs.
  public var family: Family {
    switch self {
    case .hs256, .hs384, .hs512: .hmac
    case .rs256, .rs384, .rs512: .rsa
    case .es256, .es384, .es512: .ecdsa
    }
  }

  /// OpenSSL's name of the algorithm's hash.
  var digestName: String {
    switch self {
    case .hs256, .rs256, .es256: "SHA256"
    case .hs384, .rs384, .es384: "SHA384"
    case .hs512, .rs512, .es512: "SHA512"
    }
  }

  /// The length of the algorithm's hash in bytes (and of an HS* MAC).
  var digestSize: Int {
    switch self {
    case .hs256, .rs256, .es256: 32
    case .hs384, .rs384, .es384: 48
    case .hs512, .rs512, .es512: 64
    }
  }

  /// The ES* algorithm of a curve (RFC 7518 §3.4 ties each to one curve).
  static func ecdsa(for curve: ECCurve) -> JWTAlgorithm {
    switch curve {
    case .p256: .es256
    case .p384: .es384
    case .p521: .es512
    }
  }

  /// `HS256, HS384, HS512, RS256, …`: what a verifier accepts, for messages.
  static let acceptedNames = allCases.map(\.rawValue).joined(separator: ", ")
}

/// A JWK curve (`crv`) TipsAuth verifies with.
public enum ECCurve: String, Sendable, Hashable {
  case p256 = "P-256", p384 = "P-384", p521 = "P-521"

  /// OpenSSL's group name.
  var groupName: String {
    switch self {
    case .p256: "prime256v1"
    case .p384: "secp384r1"
    case .p521: "secp521r1"
    }
  }

  /// The size of a coordinate, and of each of a JOSE signature's `r` and `s`, in bytes.
  var coordinateSize: Int {
    switch self {
    case .p256: 32
    case .p384: 48
    case .p521: 66
    }
  }
}
