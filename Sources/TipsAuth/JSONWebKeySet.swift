import TipsJSON
import TipsSystem

/// One verification key of a JWKS, chosen by a token's `kid`.
public struct JSONWebKey: Sendable, CustomStringConvertible {
  /// The key's type and size.
  public enum Kind: Sendable, Hashable, CustomStringConvertible {
    /// An RSA key with a modulus of this many bits (2048 to 16384).
    case rsa(bits: Int)
    /// An EC key on this curve.
    case ec(ECCurve)

    /// `RSA-2048` or `EC P-256`.
    public var description: String {
      switch self {
      case .rsa(let bits): "RSA-\(bits)"
      case .ec(let curve): "EC \(curve.rawValue)"
      }
    }
  }

  /// The `kid` tokens name it by.
  public let keyID: String
  /// RSA or EC, and its size.
  public let kind: Kind
  /// What it verifies: RS256, RS384 and RS512 for an RSA key (only its `alg` if the JWK names one); the curve's ES*
  /// for an EC key.
  public let algorithms: Set<JWTAlgorithm>
  let key: EVPPublicKey

  /// `RSA-2048 key "kid" (RS256, RS384, RS512)` (made once: refusals quote it).
  public let description: String

  init(keyID: String, kind: Kind, algorithms: Set<JWTAlgorithm>, key: EVPPublicKey) {
    self.keyID = keyID
    self.kind = kind
    self.algorithms = algorithms
    self.key = key
    let names = JWTAlgorithm.allCases.filter(algorithms.contains).map(\.rawValue).joined(separator: ", ")
    description = "\(kind) key \(quoted(keyID)) (\(names))"
  }
}

/// A key of the JWKS that is not used, and why (another `use`, an unsupported `kty`, `crv` or `alg`). A server
/// logs these when it loads the file: a JWKS may carry encryption keys or key types tipsd does not verify with, and
/// refusing the whole file for them would break on the issuer's next rotation.
public struct SkippedKey: Sendable, Hashable, CustomStringConvertible {
  /// The key's index in `keys`, from 0.
  public let index: Int
  /// Its `kid`, if it has one.
  public let keyID: String?
  /// Why it is not used.
  public let reason: String

  /// `key 2 (kid "enc-1"): use is "enc", not "sig"`.
  public var description: String {
    "key \(index)" + (keyID.map { " (kid \(quoted($0)))" } ?? "") + ": \(reason)"
  }
}

/// The public keys a token may be signed with: a JSON Web Key Set (RFC 7517 §5), what `--jwks FILE` holds — the
/// document Firebase Auth, Auth0 and Supabase publish at their `jwks.json` addresses:
///
/// ```json
/// {"keys": [
///   {"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": "<base64url>", "e": "AQAB"},
///   {"kty": "EC", "kid": "k2", "crv": "P-256", "x": "<base64url>", "y": "<base64url>"}
/// ]}
/// ```
///
/// - RSA keys (`n` odd, 2048 to 16384 bits; `e` odd, 3 to 2⁶⁴) verify RS256, RS384 and RS512 — only the JWK's `alg`
///   if it names one.
/// - EC keys (`crv` P-256, P-384 or P-521; `x`, `y` each exactly the coordinate size) verify ES256, ES384 or ES512
///   respectively; OpenSSL refuses a point that is not on the curve.
/// - Skipped, and listed in ``skipped``: keys whose `use` is not `sig` or whose `key_ops` lack `verify`, a `kty`
///   other than RSA and EC (`oct` secrets belong in `--jwt-secret-file`), another curve, or an `alg` tipsd does
///   not verify (PS256, RSA-OAEP, …).
/// - Refused, with the file, the key's index and the member: a file that is not such a document, a used key
///   without a `kid` or sharing one with another key, a number that is not base64url or has the wrong size, an
///   `alg` that contradicts the key (`ES256` on an RSA key), private members (`d`, `p`, …: a private key must
///   never be published), or a set with no usable key at all.
/// - Other members (`x5c`, `x5t`, `n`'s padding) are ignored; a JWKS file is never fetched from a token's `jku`.
public struct JSONWebKeySet: Sendable {
  /// The largest JWKS file read (a published key set is a few KiB).
  public static let maxFileBytes = 1 << 20

  /// Where the set came from, for messages.
  public let source: String
  /// The usable keys, in file order.
  public let keys: [JSONWebKey]
  /// The keys left out, in file order.
  public let skipped: [SkippedKey]
  private let byID: [String: JSONWebKey]
  /// `"a", "b"` (the first eight), for the unknown-kid refusal, made once.
  let keyIDList: String

  /// The key a token's `kid` names.
  public func key(id: String) -> JSONWebKey? { byID[id] }

  /// Reads `--jwks FILE`.
  public static func load(file path: String) throws(AuthConfigurationError) -> JSONWebKeySet {
    let bytes: [UInt8]
    do {
      bytes = try System.readFile(path)
    } catch {
      throw AuthConfigurationError(file: path, "cannot read the JWKS file: \(error.reason)")
    }
    return try JSONWebKeySet(json: bytes, source: path)
  }

  /// Parses a JWKS document; `source` names it in errors.
  public init(json bytes: [UInt8], source: String = "<jwks>") throws(AuthConfigurationError) {
    func fail(_ message: String, field: String? = nil) -> AuthConfigurationError {
      AuthConfigurationError(file: source, field: field, message)
    }
    guard bytes.count <= Self.maxFileBytes else {
      throw fail("\(bytes.count) bytes; a JWKS file is at most \(Self.maxFileBytes) bytes")
    }
    let document: JSONValue
    do {
      document = try JSONParser.parse(bytes, maxDepth: 16)
    } catch {
      throw fail("not JSON (\(error))")
    }
    guard case .object(let top) = document else {
      throw fail("expected a JSON object with a \"keys\" array, found \(document.typeName)")
    }
    guard let keysValue = top["keys"] else { throw fail("missing (a JWKS is {\"keys\": [...]})", field: "keys") }
    guard case .array(let entries) = keysValue else {
      throw fail("expected an array, found \(keysValue.typeName)", field: "keys")
    }
    var keys: [JSONWebKey] = []
    var skipped: [SkippedKey] = []
    var byID: [String: JSONWebKey] = [:]
    var indexOfID: [String: Int] = [:]
    for (index, entry) in entries.enumerated() {
      var reader = KeyReader(source: source, index: index)
      switch try reader.read(entry) {
      case .skipped(let reason):
        skipped.append(SkippedKey(index: index, keyID: reader.keyID, reason: reason))
      case .key(let key):
        if let first = indexOfID[key.keyID] {
          throw reader.error("also the kid of key \(first); each key needs its own", field: "kid")
        }
        indexOfID[key.keyID] = index
        byID[key.keyID] = key
        keys.append(key)
      }
    }
    guard !keys.isEmpty else {
      let why = skipped.isEmpty ? "" : " (skipped: " + skipped.map(\.description).joined(separator: "; ") + ")"
      throw fail("no key tipsd can verify with\(why)", field: "keys")
    }
    self.source = source
    self.keys = keys
    self.skipped = skipped
    self.byID = byID
    keyIDList = keys.prefix(8).map { quoted($0.keyID) }.joined(separator: ", ") + (keys.count > 8 ? ", …" : "")
  }
}

/// Reads one member of `keys`: a usable key, a key to skip, or an error naming the index and member.
private struct KeyReader {
  enum Outcome {
    case key(JSONWebKey)
    case skipped(String)
  }

  let source: String
  let index: Int
  var keyID: String?

  init(source: String, index: Int) {
    self.source = source
    self.index = index
  }

  func error(_ message: String, field: String? = nil) -> AuthConfigurationError {
    AuthConfigurationError(file: source, keyIndex: index, keyID: keyID, field: field, message)
  }

  /// A member that must be a string when present.
  func string(_ object: JSONObject, _ name: String) throws(AuthConfigurationError) -> String? {
    guard let value = object[name] else { return nil }
    guard case .string(let text) = value else { throw error("expected a string, found \(value.typeName)", field: name) }
    return text
  }

  /// A required base64url member's bytes (JWKS files sometimes pad them: `=` is accepted here, never in tokens).
  func bytes(_ object: JSONObject, _ name: String) throws(AuthConfigurationError) -> [UInt8] {
    guard let text = try string(object, name) else { throw error("missing", field: name) }
    guard let bytes = Base64URL.decode(text, allowingPadding: true), !bytes.isEmpty else {
      throw error(text.isEmpty ? "empty" : "not base64url", field: name)
    }
    return bytes
  }

  mutating func read(_ entry: JSONValue) throws(AuthConfigurationError) -> Outcome {
    guard case .object(let object) = entry else { throw error("expected a JSON object, found \(entry.typeName)") }
    keyID = try string(object, "kid")
    guard let kty = try string(object, "kty") else { throw error("missing", field: "kty") }
    if let use = try string(object, "use"), use != "sig" { return .skipped("use is \(quoted(use)), not \"sig\"") }
    if let operations = object["key_ops"] {
      guard case .array(let list) = operations, list.allSatisfy({ $0.stringValue != nil }) else {
        throw error("expected an array of strings", field: "key_ops")
      }
      if !list.contains(.string("verify")) { return .skipped("key_ops does not include \"verify\"") }
    }
    switch kty {
    case "RSA", "EC": break
    case "oct": return .skipped("kty \"oct\" (a shared secret) is not read from a JWKS: use --jwt-secret-file")
    default: return .skipped("kty \(quoted(kty)) is not supported (RSA and EC are)")
    }
    for member in ["d", "p", "q", "dp", "dq", "qi", "oth"] where object[member] != nil {
      throw error(
        "a private key member: a JWKS must hold public keys only (remove it, and replace the key)", field: member)
    }
    let alg = try string(object, "alg")
    var pinned: JWTAlgorithm?
    if let alg {
      guard let known = JWTAlgorithm(rawValue: alg) else {
        return .skipped("alg \(quoted(alg)) is not supported (RS256, RS384, RS512, ES256, ES384, ES512 are)")
      }
      pinned = known
    }
    if kty == "EC" {
      guard let crv = try string(object, "crv") else { throw error("missing", field: "crv") }
      guard let curve = ECCurve(rawValue: crv) else {
        return .skipped("crv \(quoted(crv)) is not supported (P-256, P-384 and P-521 are)")
      }
      let algorithm = JWTAlgorithm.ecdsa(for: curve)
      if let pinned, pinned != algorithm {
        throw error("\(pinned) does not go with crv \(crv) (which signs \(algorithm))", field: "alg")
      }
      let id = try requiredKeyID()
      let x = try coordinate(object, "x", curve)
      let y = try coordinate(object, "y", curve)
      switch EVPPublicKey.ec(curve: curve, x: x, y: y) {
      case .success(let key):
        return .key(JSONWebKey(keyID: id, kind: .ec(curve), algorithms: [algorithm], key: key))
      case .failure(let failure):
        throw error("x and y are not a public key on \(crv) (OpenSSL: \(failure.message))")
      }
    }
    if let pinned, pinned.family != .rsa { throw error("\(pinned) does not go with kty RSA", field: "alg") }
    let id = try requiredKeyID()
    let modulus = Array(try bytes(object, "n").drop { $0 == 0 })
    let bits = modulus.count * 8 - (modulus.first?.leadingZeroBitCount ?? 0)
    guard bits >= 2048 else { throw error("a \(bits)-bit modulus; RSA keys need at least 2048 bits", field: "n") }
    guard bits <= 16384 else { throw error("a \(bits)-bit modulus; at most 16384 bits are accepted", field: "n") }
    guard modulus.last! & 1 == 1 else { throw error("an even modulus is not an RSA key", field: "n") }
    let exponent = Array(try bytes(object, "e").drop { $0 == 0 })
    guard exponent.count <= 8, exponent.last.map({ $0 & 1 == 1 }) == true, exponent != [1] else {
      throw error("not an RSA exponent (an odd number from 3, at most 64 bits)", field: "e")
    }
    switch EVPPublicKey.rsa(modulus: modulus, exponent: exponent) {
    case .success(let key):
      let algorithms: Set<JWTAlgorithm> = pinned.map { [$0] } ?? [.rs256, .rs384, .rs512]
      return .key(JSONWebKey(keyID: id, kind: .rsa(bits: bits), algorithms: algorithms, key: key))
    case .failure(let failure):
      throw error("n and e are not an RSA public key (OpenSSL: \(failure.message))")
    }
  }

  func requiredKeyID() throws(AuthConfigurationError) -> String {
    guard let keyID else { throw error("missing (tokens choose their key by kid)", field: "kid") }
    guard !keyID.isEmpty else { throw error("empty", field: "kid") }
    return keyID
  }

  func coordinate(_ object: JSONObject, _ name: String, _ curve: ECCurve) throws(AuthConfigurationError) -> [UInt8] {
    let value = try bytes(object, name)
    guard value.count == curve.coordinateSize else {
      throw error("\(value.count) bytes; \(curve.rawValue) coordinates are \(curve.coordinateSize)", field: name)
    }
    return value
  }
}
