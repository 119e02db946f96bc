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
    // 44 characters of base64 (32 bytes once decoded): used as 44 bytes.
    let text = "c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IHNlY3I="
    let loaded = try withTemporaryFile(Array("\(text)\n".utf8)) { try HMACSecret.load(file: $0) }
    #expect(loaded.byteCount == 44)
  }

  /// Shorter than HS256's hash (32 bytes): refused, whatever it is used for — a 3-byte secret is found offline from
  /// one token in moments, and then any `sub` can be signed.
  @Test(arguments: [1, 3, 16, 31])
  func shortSecretIsRefused(length: Int) throws {
    try withTemporaryFile(Array(repeating: UInt8(ascii: "k"), count: length) + [0x0A], name: "secret") { path in
      #expect(throws: AuthConfigurationError.self) { try HMACSecret.load(file: path) }
    }
  }

  /// A secret verifies the HS algorithms whose hash it is at least as long as; asking for more is refused.
  @Test func lengthDecidesTheAlgorithms() throws {
    let bytes = { (count: Int) in Array(repeating: UInt8(ascii: "s"), count: count) }
    #expect(try HMACSecret(bytes: bytes(32)).algorithms == [.hs256])
    #expect(try HMACSecret(bytes: bytes(47)).algorithms == [.hs256])
    #expect(try HMACSecret(bytes: bytes(48)).algorithms == [.hs256, .hs384])
    #expect(try HMACSecret(bytes: bytes(64)).algorithms == [.hs256, .hs384, .hs512])
    #expect(throws: AuthConfigurationError.self) { try HMACSecret(bytes: bytes(40), algorithms: [.hs512]) }
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
    let secret = try HMACSecret(bytes: Array("hunter2-hunter2-hunter2-hunter2-hunter2".utf8), source: "jwt.secret")
    #expect(secret.description == "HMAC secret from jwt.secret (39 bytes)")
    #expect(throws: AuthConfigurationError.self) {
      try HMACSecret(bytes: Array(repeating: 1, count: 32), algorithms: [.rs256])
    }
  }
}
