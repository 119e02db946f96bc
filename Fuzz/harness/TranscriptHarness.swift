// fuzz-target: transcript
// fuzz-source: Tests/TipsHardeningTests/TranscriptFuzzOracle.swift
// Fuzzes `tipsd test`'s transcript parser (TipsTranscript's `Transcript(text:path:)`) and pattern matcher
// (`PatternMatcher`, `Substitution`). The oracle is Tests/TipsHardeningTests/TranscriptFuzzOracle.swift: parse errors
// name a line of the text, parsing is deterministic, a parsed transcript keeps to the format and reads back the same
// once written out, and every pattern (but `$regex:`) matches a value built from it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  TranscriptFuzzOracle.check(Array(UnsafeBufferPointer(start: data, count: size))) { fuzzCheck($0, $1()) }
  return 0
}
