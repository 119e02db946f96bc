// Fuzzes TipsFraming.Framer. The input is split into chunks whose sizes come from the input itself; the events
// must equal those of feeding everything at once (chunking must never change the result), messages never exceed
// the limit, and an error is terminal.
import TipsFraming

#if FRAMING_CONTENT_LENGTH
  let prefix: [UInt8] = Array("Content-Length: ".utf8)
#else
  let prefix: [UInt8] = []
#endif

func events(_ input: [UInt8], chunks: [Int], limit: Int) -> [FramerEvent] {
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
      fuzzCheck(!failed, "an event after a terminal error")
      if case .message(let bytes) = event {
        fuzzCheck(bytes.count <= limit, "a message of \(bytes.count) bytes over the limit \(limit)")
      } else {
        failed = true
        fuzzCheck(framer.failure != nil, "error without failure")
      }
      // The size in messageTooLarge is known only when the whole line arrived at once; compare without it.
      if case .error(.messageTooLarge(let limit, _)) = event {
        out.append(.error(.messageTooLarge(limit: limit, size: nil)))
      } else {
        out.append(event)
      }
    }
  }
  if failed { fuzzCheck(framer.next() == nil, "next() after an error returned an event") }
  return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  guard size >= 2 else { return 0 }
  let control = data[0]
  let chunkSeed = data[1]
  let body = prefix + Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
  // Small limits make the size checks reachable; 0x80 selects the default 1 MiB.
  let limit = control & 0x80 != 0 ? 1 << 20 : Int(control & 0x7F) + 1
  let whole = events(body, chunks: [], limit: limit)
  let chunks = [Int(chunkSeed & 0x0F) + 1, Int(chunkSeed >> 4) + 1, 1]
  let pieces = events(body, chunks: chunks, limit: limit)
  fuzzCheck(whole == pieces, "chunked feeding changed the events: \(whole) vs \(pieces)")
  return 0
}
