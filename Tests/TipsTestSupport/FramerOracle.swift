public import TipsFraming

/// The framer fuzz target's oracle: feeding input in chunks never changes the events, messages never exceed the
/// limit, and an error is terminal. One copy serves the libFuzzer harness (`Fuzz/build.sh` compiles this file into
/// it) and the suite that replays the committed corpus and crashes (`TipsHardeningTests`).
public enum FramerOracle {
  /// Reports an invariant: `holds`, else a message.
  public typealias Check = (_ holds: Bool, _ message: () -> String) -> Void

  /// Feeds `input` in chunks of the given sizes (cycled; empty: all at once) and returns the events. The size in
  /// `messageTooLarge` is known only when the whole line arrived at once, so it is dropped for comparison.
  public static func events(_ input: [UInt8], chunks: [Int], limit: Int, check: Check) -> [FramerEvent] {
    var framer = Framer(maxMessageSize: limit)
    var out: [FramerEvent] = []
    var offset = 0
    var k = 0
    var failed = false
    while offset < input.count {
      let size = chunks.isEmpty ? input.count : max(1, chunks[k % chunks.count])
      k += 1
      let end = min(input.count, offset + size)
      input[offset..<end].withUnsafeBytes { framer.feed($0) }
      offset = end
      while let event = framer.next() {
        check(!failed) { "an event after a terminal error" }
        switch event {
        case .message(let bytes):
          check(bytes.count <= limit) { "a message of \(bytes.count) bytes over the limit \(limit)" }
          out.append(event)
        case .error(let error):
          failed = true
          check(framer.failure != nil) { "error without failure" }
          if case .messageTooLarge(let limit, _) = error {
            out.append(.error(.messageTooLarge(limit: limit, size: nil)))
          } else {
            out.append(event)
          }
        }
      }
    }
    if failed { check(framer.next() == nil) { "next() after an error returned an event" } }
    return out
  }

  /// One fuzz input: byte 0 picks the limit (0x80: the default 1 MiB; else 1...128, so the size checks are
  /// reachable), byte 1 the chunk sizes; `prefix` + the rest is fed whole and in pieces, which must agree.
  public static func run(_ data: [UInt8], prefix: [UInt8], check: Check) {
    guard data.count >= 2 else { return }
    let body = prefix + data.dropFirst(2)
    let limit = data[0] & 0x80 != 0 ? 1 << 20 : Int(data[0] & 0x7F) + 1
    let chunks = [Int(data[1] & 0x0F) + 1, Int(data[1] >> 4) + 1, 1]
    let whole = events(body, chunks: [], limit: limit, check: check)
    let pieces = events(body, chunks: chunks, limit: limit, check: check)
    check(whole == pieces) { "chunked feeding changed the events: \(whole) vs \(pieces)" }
  }
}
