// fuzz-target: jwt
// fuzz-source: Tests/TipsAuthTests/AuthFuzzOracle.swift
// Fuzzes TipsAuth's token verifier: size, shape, header, key choice, signature and claims. Byte 0 picks the mode (odd:
// the rest is signed with the harness's HS256 secret first, to reach the claims); the oracle is
// Tests/TipsAuthTests/AuthFuzzOracle.swift (no crash, String and byte entry points agree, an accepted token satisfies
// every configured check, a refusal never repeats the token).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  AuthFuzzOracle.checkToken(Array(UnsafeBufferPointer(start: data, count: size))) { fuzzCheck($0, $1()) }
  return 0
}
