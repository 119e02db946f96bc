import Foundation
import Testing
import TipsJSON
import TipsTestSupport

/// Keys and tokens made by PyJWT and `cryptography` (Fixtures/mint_tokens.py), fresh for each test run — never by
/// tipsd's code. The script runs once per process; its files are read into memory and its directory removed.
struct Minted: Sendable {
  /// The instant every token was minted for (`now`).
  let now: Double
  let audience: String
  let issuer: String
  /// The secret file's bytes, trailing newline included.
  let secretFile: [UInt8]
  let jwks: [UInt8]
  /// `rsa-a`'s public key as PEM.
  let rsaPEM: [UInt8]
  /// A 1024-bit RSA public key as one JWK.
  let smallRSAKey: [UInt8]
  let tokens: [String: String]

  func token(_ name: String) -> String {
    guard let token = tokens[name] else { preconditionFailure("mint_tokens.py made no token \(name)") }
    return token
  }
}

enum PyJWT {
  /// Whether the suites that need PyJWT run: when `python3` can import PyJWT and cryptography, or when
  /// `TIPSD_REQUIRE_PYJWT=1` says they must (`make test` sets it after installing them, so there they fail rather
  /// than skip). Only a bare `swift test` on a machine without PyJWT skips them.
  static let available: Bool = {
    if ProcessInfo.processInfo.environment["TIPSD_REQUIRE_PYJWT"] == "1" { return true }
    guard let pid = try? spawnChild(["/usr/bin/env", "python3", "-c", "import jwt, cryptography"]) else { return false }
    return (try? waitForExit(pid)) == 0
  }()

  static let skipReason: Comment = "needs python3 with PyJWT and cryptography (make deps-pip installs pyjwt[crypto])"

  /// The minted fixtures (a failure describes the script's error output).
  static func minted() throws -> Minted { try cached.get() }

  private static let cached: Result<Minted, TestFailure> = Result { () throws(TestFailure) in try mint() }

  private static func mint() throws(TestFailure) -> Minted {
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
      "Fixtures/mint_tokens.py"
    ).path
    let errors = directory + "/stderr"
    do {
      let pid = try spawnChild(
        ["/usr/bin/env", "python3", script, directory + "/out"],
        errors: .file(errors))
      let status = try waitForExit(pid)
      guard status == 0 else {
        let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        throw TestFailure("mint_tokens.py failed (status \(status)):\n\(text)")
      }
    } catch let failure as TestFailure {
      throw failure
    } catch {
      throw TestFailure("cannot run mint_tokens.py: \(error)")
    }
    func read(_ name: String) throws(TestFailure) -> [UInt8] {
      guard let data = FileManager.default.contents(atPath: directory + "/out/" + name) else {
        throw TestFailure("mint_tokens.py wrote no \(name)")
      }
      return Array(data)
    }
    let manifest: JSONValue
    do {
      manifest = try JSONParser.parse(try read("tokens.json"))
    } catch {
      throw TestFailure("tokens.json: \(error)")
    }
    var tokens: [String: String] = [:]
    for (name, value) in manifest["tokens"]?.objectValue ?? [:] { tokens[name] = value.stringValue }
    guard let now = manifest["now"]?.doubleValue, let audience = manifest["audience"]?.stringValue,
      let issuer = manifest["issuer"]?.stringValue, !tokens.isEmpty
    else { throw TestFailure("tokens.json lacks now, audience, issuer or tokens") }
    return Minted(
      now: now, audience: audience, issuer: issuer, secretFile: try read("secret"), jwks: try read("jwks.json"),
      rsaPEM: try read("rsa-a.pem"), smallRSAKey: try read("rsa-1024.jwk"), tokens: tokens)
  }
}

/// Writes `bytes` to a file in a fresh directory, runs `body` with its path, and removes both.
@discardableResult
func withTemporaryFile<T>(_ bytes: [UInt8], name: String = "file", _ body: (String) throws -> T) throws -> T {
  let directory = temporaryDirectory()
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let path = directory + "/" + name
  guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
    throw TestFailure("cannot write \(path)")
  }
  return try body(path)
}
