import Foundation
import Testing
import TipsAuth

@Suite struct Base64URLTests {
  /// Every length from 0 to 40 bytes, against Foundation's base64 turned into base64url.
  @Test func matchesFoundationBothWays() {
    var generator = SystemRandomNumberGenerator()
    for length in 0...40 {
      let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
      let reference = Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
      #expect(Base64URL.encode(bytes) == reference)
      #expect(Base64URL.decode(reference) == bytes)
    }
  }

  @Test(arguments: [
    "QQ=", "QQ==", "Q", "QQ QQ", "QQ\n", "ab+c", "ab/c", "QR", "QUF", "QUI=",
  ])
  func refusesNonCanonicalText(text: String) {
    #expect(Base64URL.decode(text) == nil)
  }

  @Test func paddingOnlyWhenAllowed() {
    #expect(Base64URL.decode("QQ==", allowingPadding: true) == [0x41])
    #expect(Base64URL.decode("QUE=", allowingPadding: true) == [0x41, 0x41])
    #expect(Base64URL.decode("QQ=", allowingPadding: true) == nil)
    #expect(Base64URL.decode("Q===", allowingPadding: true) == nil)
    #expect(Base64URL.decode("QUE=", allowingPadding: false) == nil)
    #expect(Base64URL.decode("") == [])
  }
}
