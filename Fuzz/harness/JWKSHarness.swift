// fuzz-target: jwks
// fuzz-source: Tests/TipsAuthTests/AuthFuzzOracle.swift
// Fuzzes TipsAuth's JWKS loader (`--jwks FILE`): keys built through OpenSSL from n/e and x/y, skipped keys, errors.
// The oracle is Tests/TipsAuthTests/AuthFuzzOracle.swift (no crash, deterministic, kids unique and found, no key
// verifies HS*, a forged token never verifies with a loaded key).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  AuthFuzzOracle.checkJWKS(Array(UnsafeBufferPointer(start: data, count: size))) { fuzzCheck($0, $1()) }
  return 0
}
