import Foundation
import Testing

/// The `jwt` and `jwks` fuzz targets' oracle over their committed seeds (Fuzz/corpus/<target>/) and any crash found
/// since (Fuzz/regressions/<target>/), in `make test`.
@Suite struct FuzzSeedTests {
  static func inputs(_ target: String) -> [(String, [UInt8])] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    var found: [(String, [UInt8])] = []
    for kind in ["corpus", "regressions"] {
      let directory = root.appendingPathComponent("Fuzz/\(kind)/\(target)")
      for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.sorted() ?? [] {
        if let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) {
          found.append(("\(kind)/\(target)/\(name)", Array(data)))
        }
      }
    }
    return found
  }

  @Test func tokenSeeds() {
    let inputs = Self.inputs("jwt")
    #expect(inputs.count >= 10)
    var accepted: [String] = []
    for (name, data) in inputs {
      AuthFuzzOracle.checkToken(data) { holds, message in #expect(holds, "\(name): \(message())") }
      if (try? AuthFuzzOracle.verifier.verify(AuthFuzzOracle.token(data), now: AuthFuzzOracle.now).get()) != nil {
        accepted.append(name.split(separator: "/").last.map(String.init) ?? name)
      }
    }
    // The seeds reach acceptance by every route: HS256, RS256 and ES256 as minted, and re-signed by the harness. The
    // harness's secret is 48 bytes: shorter than HS512's hash, so the hs512 seed is refused (RFC 7518 §3.2).
    #expect(accepted.sorted() == ["es256", "hs256", "rs256", "signed-aud-array", "signed-nested", "signed-plain"])
  }

  @Test func jwksSeeds() {
    let inputs = Self.inputs("jwks")
    #expect(inputs.count >= 5)
    for (name, data) in inputs {
      AuthFuzzOracle.checkJWKS(data) { holds, message in #expect(holds, "\(name): \(message())") }
    }
  }
}
