import TipsJSON

/// The protocol's OpenRPC document, returned by `rpc.discover`. Its text is embedded at build time from
/// `protocol/openrpc.json` by `scripts/embed-openrpc` (a test fails when the two differ), so the daemon never
/// reads it from disk.
enum OpenRPCDocument {
  /// Parsed once, on first use.
  static let value: JSONValue = {
    do {
      return try JSONParser.parse(text)
    } catch {
      preconditionFailure("the embedded OpenRPC document is not valid JSON: \(error)")
    }
  }()
}
