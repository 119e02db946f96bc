public import TipsJSON

/// `inspect/state`: everything an inspector shows (`tipsd inspect`, the web inspector at `GET /`): every tip with its
/// state, explanation and budget, events with their counts and last donation, parameters, groups, overrides, the
/// clock and the history's cursors. With `watch: true`, one `inspect/changed` follows the next change.
public struct InspectStateRequest: RequestType, Hashable {
  public static let method = "inspect/state"
  public static let params: [ParamSpec] = [.optional("watch")]

  public var watch: Bool

  public init(watch: Bool = false) { self.watch = watch }

  public init(from p: Params) throws(ResponseError) {
    watch = try p.optionalBool("watch") ?? false
  }

  public struct Response: ResultValue, Hashable {
    public var state: JSONValue
    public init(state: JSONValue) { self.state = state }
    public static let shape = ResultShape.object(
      ObjectShape(
        [
          "now", "virtualClock", "testing", "displayFrequency", "tips", "events", "parameters", "groups",
          "suppression", "overrides", "history", "subscription",
        ], optional: ["subscription"]), schema: "InspectState")
    public func write(to writer: inout JSONWriter) { writer.write(state) }
  }
}
