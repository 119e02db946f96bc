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

extension OpenRPCDocument {
  /// The names of each method's params, as the document declares them: anything else is rejected.
  static let paramNames: [String: Set<String>] = {
    var names: [String: Set<String>] = [:]
    for method in value["methods"]?.arrayValue ?? [] {
      guard let name = method["name"]?.stringValue, let params = method["params"]?.arrayValue else { continue }
      names[name] = Set(params.compactMap { $0["name"]?.stringValue })
    }
    return names
  }()
}
