import Testing
import TipsAuth

@Suite struct HMACSecretTests {
  /// The file's bytes minus one trailing `\n` or `\r\n`, nothing else: checked on PyJWT's HS256 token.
  @Test(.enabled(if: PyJWT.available, PyJWT.skipReason))
  func fileFormatTrimsOneNewline() throws {
    let minted = try PyJWT.minted()
    #expect(minted.secretFile.last == UInt8(ascii: "\n"))
    let secret = Array(minted.secretFile.dropLast())
    let newline = Array("\n".utf8)
    let cases: [([UInt8], Bool)] = [
      (secret + newline, true), (secret + Array("\r\n".utf8), true), (secret, true),
      (secret + newline + newline, false), (secret + Array(" \n".utf8), false), (Array(" ".utf8) + secret, false),
    ]
    for (file, accepted) in cases {
      let loaded = try withTemporaryFile(file) { try HMACSecret.load(file: $0) }
      let verifier = try TokenVerifier(.init(secrets: [loaded]))
      let result = verifier.verify(minted.token("hs256"), now: minted.now)
      #expect(((try? result.get()) != nil) == accepted, "\(String(decoding: file, as: UTF8.self).debugDescription)")
    }
  }

  /// A secret that looks like base64 is used as the text it is.
  @Test func secretIsNotDecoded() throws {
    let loaded = try withTemporaryFile(Array("c2VjcmV0\n".utf8)) { try HMACSecret.load(file: $0) }
    #expect(loaded.byteCount == 8)
  }

  @Test(arguments: ["", "\n", "\r\n"])
  func emptySecretIsRefused(file: String) throws {
    try withTemporaryFile(Array(file.utf8), name: "secret") { path in
      #expect(
        throws: AuthConfigurationError(file: path, "the secret is empty (an empty HMAC key would verify nothing)")
      ) {
        try HMACSecret.load(file: path)
      }
    }
  }

  @Test func missingFileIsNamed() {
    #expect(
      throws: AuthConfigurationError(
        file: "/nonexistent/secret", "cannot read the secret file: No such file or directory")
    ) {
      try HMACSecret.load(file: "/nonexistent/secret")
    }
  }

  @Test func descriptionNeverShowsTheSecret() throws {
    let secret = try HMACSecret(bytes: Array("hunter2-hunter2".utf8), source: "jwt.secret")
    #expect(secret.description == "HMAC secret from jwt.secret (15 bytes)")
    #expect(secret.isShorterThanRecommended)
    #expect(throws: AuthConfigurationError.self) { try HMACSecret(bytes: [1], algorithms: [.rs256]) }
  }
}
