import Testing
import TipsJSON

@Suite struct JSONStringTextTests {
  @Test("raw UTF-8, one-letter escapes and \\u escapes build the literal's text; surrogates pair, unpaired ones drop")
  func pieces() {
    var text = JSONStringText()
    for byte in Array("café ".utf8) { text.append(byte: byte) }
    for escape in Array("ntrbf\"\\/".utf8) { text.append(escape: escape) }
    text.append(unicode: 0x41)
    text.append(unicode: 0xD83E)  // 🧭 = U+1F9ED: D83E DDED
    text.append(unicode: 0xDDED)
    text.append(unicode: 0xDC00)  // a low surrogate with no high one before it
    text.append(unicode: 0xD800)  // a high surrogate never followed by its low one
    text.append(byte: UInt8(ascii: "!"))
    #expect(text.text() == "café \n\t\r\u{08}\u{0C}\"\\/A🧭!")
  }

  @Test("an escape ends a raw run: invalid UTF-8 on either side is decoded apart, never joined")
  func runsStayApart() {
    let euro: [UInt8] = [0xE2, 0x82, 0xAC]
    var joined = JSONStringText()
    for byte in euro { joined.append(byte: byte) }
    #expect(joined.text() == "€")
    var split = JSONStringText()
    split.append(byte: euro[0])
    split.flush()
    split.append(byte: euro[1])
    split.append(byte: euro[2])
    #expect(split.text() == "\u{FFFD}\u{FFFD}\u{FFFD}")
  }
}
