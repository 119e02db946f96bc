import Foundation

/// HS256 tokens minted by PyJWT — never by tipsd's own code — for in-process tests of hosted mode: one `python3`
/// run per call, signing each subject's token with the test's secret.
public enum PyJWTMint {
  /// Whether python3 can import PyJWT (`make test` installs it and sets `TIPSD_REQUIRE_PYJWT=1`: then tests that
  /// need it fail rather than skip).
  public static let available: Bool = {
    if ProcessInfo.processInfo.environment["TIPSD_REQUIRE_PYJWT"] == "1" { return true }
    guard let pid = try? spawnChild(["/usr/bin/env", "python3", "-c", "import jwt"]) else { return false }
    return (try? waitForExit(pid)) == 0
  }()

  private static let script = """
    import json, sys, time, jwt
    spec = json.loads(sys.argv[1])
    now = spec["now"] if spec["now"] is not None else time.time()
    out = {}
    for sub in spec["subjects"]:
        claims = {"sub": sub, "aud": spec["audience"], "iss": spec["issuer"], "iat": int(now),
                  "exp": now + spec["lifetime"]}
        out[sub] = jwt.encode(claims, spec["secret"], algorithm="HS256")
    print(json.dumps(out))
    """

  /// A token for each subject, `lifetime` seconds from `now` (default: the wall clock).
  public static func tokens(
    _ subjects: [String], secret: String, audience: String, issuer: String, lifetime: Double = 3600,
    now: Double? = nil
  ) throws -> [String: String] {
    let spec: [String: Any] = [
      "subjects": subjects, "secret": secret, "audience": audience, "issuer": issuer, "lifetime": lifetime,
      "now": now.map { $0 as Any } ?? NSNull(),
    ]
    let argument = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
    let directory = NSTemporaryDirectory() + "tipsd-mint-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let output = directory + "/tokens.json"
    let pid = try spawnChild(
      ["/usr/bin/env", "python3", "-c", script, argument], output: .file(output), errors: .file(directory + "/err"))
    let status = try waitForExit(pid)
    guard status == 0, let data = FileManager.default.contents(atPath: output),
      let tokens = try JSONSerialization.jsonObject(with: data) as? [String: String]
    else {
      let errors = (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? ""
      throw TestFailure("PyJWT could not mint tokens (status \(status)): \(errors)")
    }
    return tokens
  }
}
