/// Something that wants to see a client's traffic (the tests' traffic log, validated against the OpenRPC document):
/// both clients (the blocking `JSONRPCClient`, the embedded loop's `EmbeddedClient`) report every message to it.
public protocol MessageTap: AnyObject, Sendable {
  /// `direction` is `"out"` or `"in"`; `payload` is one message's bytes (unframed).
  func record(_ direction: String, payload: [UInt8])
}
