public import TipsEngine
public import TipsJSON

/// `accounts/export` (hosted mode, admin only): everything tipsd holds about one account, as JSON — a user's
/// data-access request. `accounts/import` reads it back into an account.
public struct AccountsExportRequest: RequestType, Hashable {
  public static let method = "accounts/export"
  public static let traits: MethodTraits = .accountFree
  public static let params: [ParamSpec] = [.required("account")]

  public var account: String

  public init(account: String) { self.account = account }

  public init(from p: Params) throws(ResponseError) {
    account = try p.string("account")
  }

  public struct Response: ResultValue, Hashable {
    public var account: String
    /// When the export was made (seconds since 1970-01-01 UTC).
    public var exportedAt: Double
    /// The account's merged state (a snapshot: what every device and node contributed, and each event's donations).
    public var state: JSONValue
    /// Its lifecycle history, oldest first (the `analytics/event` shape without `subscription` and `seq`).
    public var history: [AnalyticsEventInfo]
    /// The goal and app-closed donations its history recorded (`{cursor, event, at}`), oldest first: the analytics
    /// stream does not carry them, the metrics read them.
    public var donations: [HistoryEvent]

    public init(
      account: String, exportedAt: Double, state: JSONValue, history: [AnalyticsEventInfo], donations: [HistoryEvent]
    ) {
      self.account = account
      self.exportedAt = exportedAt
      self.state = state
      self.history = history
      self.donations = donations
    }

    public static let shape = ResultShape.object(
      ObjectShape(["account", "exportedAt", "state", "history", "donations"]), schema: "AccountExport")

    public func write(to writer: inout JSONWriter) {
      writer.beginObject()
      writer.key("account")
      writer.writeString(account)
      writer.key("exportedAt")
      writer.writeDouble(exportedAt)
      writer.member("state", state)
      writer.key("history")
      writer.beginArray()
      for event in history { event.write(to: &writer) }
      writer.endArray()
      writer.key("donations")
      writer.beginArray()
      for donation in donations {
        writer.beginObject()
        writer.key("cursor")
        writer.writeInt(donation.cursor)
        writer.key("event")
        writer.writeString(donation.eventID ?? "")
        writer.key("at")
        writer.writeDouble(donation.at)
        writer.endObject()
      }
      writer.endArray()
      writer.endObject()
    }
  }
}

extension AccountsExportRequest.Response: DecodableResult {
  public init(from r: ResultReader) throws(ResultDecodingError) {
    self.init(
      account: try r.string("account"), exportedAt: try r.double("exportedAt"), state: try r.value("state"),
      history: try r.decodeArray("history", of: AnalyticsEventInfo.self),
      donations: try r.array("donations").enumerated().map { index, item throws(ResultDecodingError) in
        let entry = try ResultReader(item, path: "result.donations[\(index)]")
        return HistoryEvent(
          cursor: try entry.int64("cursor"), kind: .donation, at: try entry.double("at"),
          eventID: try entry.string("event"))
      })
  }
}

extension AccountsExportRequest: EncodableRequest {
  public var encodedParams: JSONValue? { ["account": .string(account)] }
}
