// fuzz-target: framer_newline
// fuzz-target: framer_content_length -D FRAMING_CONTENT_LENGTH
// fuzz-source: Tests/TipsTestSupport/FramerOracle.swift
// Fuzzes TipsFraming.Framer with FramerOracle (Tests/TipsTestSupport/FramerOracle.swift, compiled in by
// Fuzz/build.sh): the input is split into chunks whose sizes come from the input itself; the events must equal
// those of feeding everything at once, messages never exceed the limit, and an error is terminal.
#if FRAMING_CONTENT_LENGTH
  let prefix: [UInt8] = Array("Content-Length: ".utf8)
#else
  let prefix: [UInt8] = []
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  FramerOracle.run(Array(UnsafeBufferPointer(start: data, count: size)), prefix: prefix) { holds, message in
    fuzzCheck(holds, message())
  }
  return 0
}
