public import TipsJSON

/// `catalog/reload`: reads the daemon's catalog file (and message files) again and applies what changed, like
/// SIGHUP. A catalog with errors changes nothing: the one in force keeps serving and the result lists the errors.
public struct CatalogReloadRequest: RequestType, Hashable {
  public static let method = "catalog/reload"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = []

  public init() {}

  public init(from p: Params) throws(ResponseError) {}

  public struct Response: ResultValue, Hashable {
    /// Whether the new catalog is in force.
    public var applied: Bool
    public var added: [String]
    public var removed: [String]
    public var changed: [String]
    public var unchanged: [String]
    /// `{severity, message, file?, path?, line?, column?, check?}` per problem found.
    public var diagnostics: [JSONValue]

    public init(
      applied: Bool, added: [String] = [], removed: [String] = [], changed: [String] = [], unchanged: [String] = [],
      diagnostics: [JSONValue] = []
    ) {
      self.applied = applied
      self.added = added
      self.removed = removed
      self.changed = changed
      self.unchanged = unchanged
      self.diagnostics = diagnostics
    }

    public static let shape = ResultShape.object(
      ObjectShape(["applied", "added", "removed", "changed", "unchanged", "diagnostics"]), schema: "CatalogReload")

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("applied")
      writer.writeBool(applied)
      writer.key("added")
      writer.writeStringArray(added)
      writer.key("removed")
      writer.writeStringArray(removed)
      writer.key("changed")
      writer.writeStringArray(changed)
      writer.key("unchanged")
      writer.writeStringArray(unchanged)
      writer.key("diagnostics")
      writer.write(.array(diagnostics))
      writer.endObject()
    }
  }
}

extension CatalogReloadRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      applied: try r.bool("applied"), added: try r.strings("added"), removed: try r.strings("removed"),
      changed: try r.strings("changed"), unchanged: try r.strings("unchanged"), diagnostics: try r.array("diagnostics"))
  }
}
