import Testing
import TipsTransport

@Suite struct AccessPolicyTests {
  static let token = String(repeating: "a1", count: 32)

  /// The token followed by 256 NUL bytes once compared equal: the length difference was folded to 8 bits and the
  /// shorter string padded with zeros.
  @Test(arguments: [1, 255, 256, 512, 4096])
  func aTokenPaddedWithNULsIsNotTheToken(padding: Int) {
    let padded = Self.token + String(repeating: "\u{0}", count: padding)
    #expect(!AccessPolicy.constantTimeEqual(padded, Self.token))
    #expect(!AccessPolicy.constantTimeEqual(Self.token, padded))
  }

  @Test func equalAndUnequalTokens() {
    #expect(AccessPolicy.constantTimeEqual(Self.token, String(Self.token)))
    var other = Array(Self.token.utf8)
    other[63] ^= 1
    #expect(!AccessPolicy.constantTimeEqual(Self.token, String(decoding: other, as: UTF8.self)))
    #expect(!AccessPolicy.constantTimeEqual(Self.token, String(Self.token.dropLast())))
    #expect(!AccessPolicy.constantTimeEqual("", Self.token))
    #expect(AccessPolicy.constantTimeEqual("", ""))
  }

  /// The listener's check of a presented token goes through the same comparison.
  @Test func theListenerRefusesAPaddedToken() {
    let policy = AccessPolicy(token: Self.token)
    #expect(policy.checkToken(authorization: "Bearer \(Self.token)", protocols: nil) == .allow)
    let padded = Self.token + String(repeating: "\u{0}", count: 256)
    #expect(policy.checkToken(authorization: "Bearer \(padded)", protocols: nil) != .allow)
  }
}
