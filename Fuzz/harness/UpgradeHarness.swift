// fuzz-target: upgrade
// fuzz-source: Tests/TipsHardeningTests/UpgradeFuzzOracle.swift
// Fuzzes what the HTTP/WebSocket listener reads from an upgrade request before letting it through: TipsTransport's
// AccessPolicy (the token from `Authorization: Bearer`, the `tipsd.token.` subprotocol or hosted mode's `access_token`
// query value; Host and Origin) and `ListenAddress`. Input: Authorization, Sec-WebSocket-Protocol, access_token, Host,
// Origin, `--listen` and `tls`, one a line. The oracle is Tests/TipsHardeningTests/UpgradeFuzzOracle.swift.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  UpgradeFuzzOracle.check(Array(UnsafeBufferPointer(start: data, count: size))) { fuzzCheck($0, $1()) }
  return 0
}
