// fuzz-target: hosted
// fuzz-source: Tests/TipsHardeningTests/HostedDispatcherFuzzOracle.swift
// Fuzzes hosted mode's dispatcher (issue #33): a node on `--hosted memory:` and the embedded loop, driven by a script
// of steps read from the input — connections opened and closed, frames (single messages and batches of any method,
// with sign-ins, refreshes, other accounts' ids, subscription ids, idempotency keys, junk, raw bytes), time passing,
// the store taken away or failing commits. The oracle (Tests/TipsHardeningTests/HostedDispatcherFuzzOracle.swift):
// every request answered exactly once unless the node closed the connection saying why, and no connection signed in
// as one account receives another account's id.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  HostedDispatcherFuzzOracle.check(Array(UnsafeBufferPointer(start: data, count: size))) { fuzzCheck($0, $1()) }
  return 0
}
