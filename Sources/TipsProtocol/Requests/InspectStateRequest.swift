public import TipsJSON

/// `inspect/state`: everything an inspector shows (`tipsd inspect`, the web inspector at `GET /`): every tip with its
/// state, explanation and budget, events with their counts and last donation, parameters, groups, overrides, the
/// clock and the history's cursors. With `watch: true`, one `inspect/changed` follows the next change.
public struct InspectStateRequest: EncodableRequest, Hashable {
  public static let method = "inspect/state"
  public static let params: [ParamSpec] = [.optional("watch")]

  public var watch: Bool

  public init(watch: Bool = false) { self.watch = watch }

  public init(from p: Params) throws(ResponseError) {
    watch = try p.optionalBool("watch") ?? false
  }

  public struct Response: ResultValue, Hashable, DecodableResult {
    public var state: InspectState
    public init(state: InspectState) { self.state = state }
    public init(from r: ResultReader) throws(ResultDecodingError) { state = try InspectState(from: r) }
    public static let shape = ResultShape.object(
      ObjectShape(
        [
          "now", "virtualClock", "testing", "displayFrequency", "tips", "events", "parameters", "groups",
          "suppression", "overrides", "history", "subscription",
        ], optional: ["subscription"]), schema: "InspectState")
    public func write(to writer: inout JSONWriter) { writer.write(state.json) }
  }
}

extension InspectStateRequest {
  public var encodedParams: JSONValue? { watch ? ["watch": true] : nil }
}
