import Testing
import TipsJSON

@Suite("PlainScanner reads plain strings eight bytes at a time exactly as one byte at a time")
struct PlainScannerTests {
  /// The plain string at the start of `bytes` read one byte at a time: the range of its contents, or nil.
  static func reference(_ bytes: [UInt8]) -> Range<Int>? {
    guard bytes.first == UInt8(ascii: "\"") else { return nil }
    for i in 1..<bytes.count {
      let byte = bytes[i]
      if byte == UInt8(ascii: "\"") { return 1..<i }
      guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
    }
    return nil
  }

  @Test("every byte value at every position of strings around the eight-byte steps")
  func everyByteEverywhere() {
    for length in [0, 1, 7, 8, 9, 15, 16, 17, 23] {
      for position in 0..<(length + 2) {
        for value in 0...255 {
          var bytes = [UInt8(ascii: "\"")] + [UInt8](repeating: UInt8(ascii: "a"), count: length) + [UInt8(ascii: "\"")]
          // Past the closing quote too: what follows a string must not change how it reads.
          bytes += Array(#":"x"}"#.utf8)
          if position + 1 < bytes.count { bytes[position + 1] = UInt8(value) }
          let expected = Self.reference(bytes)
          let got = bytes.withUnsafeBufferPointer { buffer -> (Range<Int>?, Int) in
            var scanner = PlainScanner(buffer)
            let range = scanner.plainString()
            return (range, scanner.index)
          }
          #expect(got.0 == expected, "length \(length), byte \(value) at \(position)")
          if let expected { #expect(got.1 == expected.upperBound + 1) }
        }
      }
    }
  }

  @Test("a string that runs to the end of the input, at every length, is not plain")
  func unterminated() {
    for length in 0..<20 {
      let bytes = [UInt8(ascii: "\"")] + [UInt8](repeating: UInt8(ascii: "z"), count: length)
      bytes.withUnsafeBufferPointer { buffer in
        var scanner = PlainScanner(buffer)
        #expect(scanner.plainString() == nil)
      }
    }
  }
}
