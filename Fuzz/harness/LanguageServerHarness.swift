// fuzz-target: lsp
// fuzz-source: Tests/TipsHardeningTests/LanguageServerFuzzOracle.swift
// Fuzzes `tipsd lsp`: the bytes an editor writes to the server, framed as LanguageServerRunner frames them
// (Content-Length or newlines) and handled by TipsLanguageServer's `LanguageServer` (lifecycle, documents and edits,
// completion, hover, definition, code actions, the lint's diagnostics). The oracle is
// Tests/TipsHardeningTests/LanguageServerFuzzOracle.swift: every request gets exactly one reply with its id, a
// notification none, everything sent is valid JSON-RPC, diagnostics' ranges are ordered.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  LanguageServerFuzzOracle.check(Array(UnsafeBufferPointer(start: data, count: size))) { fuzzCheck($0, $1()) }
  return 0
}
