import TipsEngine

#if canImport(Glibc)
  import Glibc
#endif

/// The daemon's counters and histograms (requests, commits, connections, notifications — not seed 000's product
/// metrics, which are `TipsMetrics`), rendered in the Prometheus text format (0.0.4) at
/// `GET /metrics`. Loop thread only; counting a request is two array increments and a bucket search.
final class ServerCounters {
  /// A Prometheus histogram with fixed upper bounds.
  final class Histogram {
    let bounds: [Double]
    // Observed for every request: `@exclusivity(unchecked)` like the counters below (loop thread only).
    @exclusivity(unchecked) private(set) var counts: [UInt64]
    @exclusivity(unchecked) private(set) var sum: Double = 0
    @exclusivity(unchecked) private(set) var count: UInt64 = 0

    init(bounds: [Double]) {
      self.bounds = bounds
      counts = [UInt64](repeating: 0, count: bounds.count)
    }

    func observe(_ value: Double) {
      sum += value
      count += 1
      // Non-cumulative here; cumulated when rendered.
      for index in bounds.indices where value <= bounds[index] {
        counts[index] += 1
        return
      }
    }
  }

  /// Request methods by slot (the registry's, then `unknown` for any other name).
  let methods: [String]
  let slots: [String: Int]
  @exclusivity(unchecked) private var ok: [UInt64]
  @exclusivity(unchecked) private var failed: [UInt64]
  let requestDuration = Histogram(bounds: [
    0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.1, 1,
  ])
  let commitDuration = Histogram(bounds: [
    0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
  ])
  let commitBatch = Histogram(bounds: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 5_000])
  var commitFailures: UInt64 = 0
  var connectionsAccepted: [String: UInt64] = [:]
  /// Connections refused (-32010 or HTTP 429), by limit: `daemon` (`--max-connections`), `peer`, `rate`.
  var connectionsRefused: [String: UInt64] = [:]
  /// Hosted mode's -32015 refusals, by quota (``HostedService/quotaRefusal``).
  var quotaRefusals: [String: UInt64] = [:]
  /// Every quota a hosted node refuses with (each is rendered, at 0 until used).
  static let quotas = [
    "rate", "donations", "idempotencyKeys", "stateBytes", "infoBytes", "undeclaredParameters", "devices", "sessions",
    "historyRows",
  ]
  var notificationsCoalesced: UInt64 = 0
  var notificationsSent: [String: UInt64] = [:]
  /// By `HistoryEvent.Kind.code`. `@exclusivity(unchecked)` like the counters below: loop thread only.
  @exclusivity(unchecked) var historyEvents = [UInt64](
    repeating: 0, count: HistoryEvent.Kind.allCases.map(\.code).max()! + 1)

  init(methods requestMethods: [String]) {
    methods = requestMethods + ["unknown"]
    var slots: [String: Int] = [:]
    for (index, method) in requestMethods.enumerated() { slots[method] = index }
    self.slots = slots
    ok = [UInt64](repeating: 0, count: methods.count)
    failed = ok
  }

  /// The slot counting `method` (`unknown` for a name that is not a method).
  func slot(of method: String) -> Int { slots[method] ?? unknownSlot }

  /// The slot of names that are not methods.
  var unknownSlot: Int { methods.count - 1 }

  func requestAnswered(slot: Int, ok succeeded: Bool, seconds: Double) {
    if succeeded { ok[slot] += 1 } else { failed[slot] += 1 }
    requestDuration.observe(seconds)
  }

  // MARK: Rendering

  /// The values sampled when scraped.
  struct Gauges {
    var connections: [String: Int]
    var subscriptions: [String: Int]
    var datastoreBytes: Int64?
    var historyCursor: Int64
    var uptimeSeconds: Double
    var version: String
    /// Hosted mode: whether each PostgreSQL link is up (writer, reader, listener).
    var hostedLinks: [(link: String, up: Bool)] = []
    /// Hosted mode: tokens refused before any signature check, and signature checks that failed, since start.
    var signInThrottled: Int?
    var signInFailures: Int?
    /// Hosted mode: accounts checked against PostgreSQL, and those found apart and read again (the repair net).
    var repairChecks: Int?
    var repairs: Int?
    /// Webhook delivery attempts by result, and the oldest undelivered event's age (hosted over PostgreSQL).
    var webhookResults: [String: Int]?
    var webhookLag: Double?
  }

  func render(_ gauges: Gauges) -> String {
    var out = ""
    func family(_ name: String, _ type: String, _ help: String) {
      out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }
    func sample(_ name: String, _ labels: [(String, String)] = [], _ value: String) {
      if labels.isEmpty {
        out += "\(name) \(value)\n"
      } else {
        out += "\(name){" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "} \(value)\n"
      }
    }
    func histogram(_ name: String, _ help: String, _ h: Histogram) {
      family(name, "histogram", help)
      var cumulative: UInt64 = 0
      for (index, bound) in h.bounds.enumerated() {
        cumulative += h.counts[index]
        sample("\(name)_bucket", [("le", Self.number(bound))], String(cumulative))
      }
      sample("\(name)_bucket", [("le", "+Inf")], String(h.count))
      sample("\(name)_sum", [], Self.number(h.sum))
      sample("\(name)_count", [], String(h.count))
    }

    family("tipsd_build_info", "gauge", "The daemon's version (always 1).")
    sample("tipsd_build_info", [("version", gauges.version)], "1")
    family("tipsd_uptime_seconds", "gauge", "Seconds since the daemon started.")
    sample("tipsd_uptime_seconds", [], Self.number(gauges.uptimeSeconds))

    family(
      "tipsd_requests_total", "counter",
      "Requests handled, by method and outcome (ok: a result; error: an error reply).")
    for (index, method) in methods.enumerated() {
      if ok[index] > 0 { sample("tipsd_requests_total", [("method", method), ("outcome", "ok")], String(ok[index])) }
      if failed[index] > 0 {
        sample("tipsd_requests_total", [("method", method), ("outcome", "error")], String(failed[index]))
      }
    }
    histogram(
      "tipsd_request_duration_seconds", "Time to decode, handle and encode a request (the commit is not included).",
      requestDuration)
    histogram("tipsd_commit_duration_seconds", "Time of one group commit (one SQLite transaction).", commitDuration)
    histogram(
      "tipsd_commit_batch_size", "State writes and history entries per group commit (one event-loop turn).", commitBatch
    )
    family("tipsd_commit_failures_total", "counter", "Group commits that failed (their requests got -32005).")
    sample("tipsd_commit_failures_total", [], String(commitFailures))

    family("tipsd_connections", "gauge", "Open client connections, by transport.")
    for transport in ["stdio", "unix", "websocket"] {
      sample("tipsd_connections", [("transport", transport)], String(gauges.connections[transport] ?? 0))
    }
    family("tipsd_connections_accepted_total", "counter", "Client connections accepted, by transport.")
    for transport in ["stdio", "unix", "websocket"] {
      sample(
        "tipsd_connections_accepted_total", [("transport", transport)], String(connectionsAccepted[transport] ?? 0))
    }
    family(
      "tipsd_connections_refused_total", "counter",
      "Connections refused by a limit: daemon (--max-connections), peer (--max-connections-per-peer), rate "
        + "(--peer-connection-rate).")
    for limit in ["daemon", "peer", "rate"] {
      sample("tipsd_connections_refused_total", [("limit", limit)], String(connectionsRefused[limit] ?? 0))
    }
    family(
      "tipsd_quota_refusals_total", "counter",
      "Hosted mode: requests refused with -32015 because an account's budget was used up, by quota.")
    for quota in Self.quotas {
      sample("tipsd_quota_refusals_total", [("quota", quota)], String(quotaRefusals[quota] ?? 0))
    }
    family("tipsd_subscriptions", "gauge", "Open subscriptions, by kind.")
    for kind in ["observe", "actions", "analytics", "inspect"] {
      sample("tipsd_subscriptions", [("kind", kind)], String(gauges.subscriptions[kind] ?? 0))
    }
    family("tipsd_notifications_total", "counter", "Notifications staged for subscribers, by method.")
    for method in notificationsSent.keys.sorted() {
      sample("tipsd_notifications_total", [("method", method)], String(notificationsSent[method]!))
    }
    family(
      "tipsd_notifications_coalesced_total", "counter",
      "tips/shouldDisplayChanged notifications replaced or dropped while a slow client's queue held an older one.")
    sample("tipsd_notifications_coalesced_total", [], String(notificationsCoalesced))
    family("tipsd_history_events_total", "counter", "Lifecycle history entries recorded, by type.")
    for kind in HistoryEvent.Kind.allCases {
      sample("tipsd_history_events_total", [("type", kind.rawValue)], String(historyEvents[kind.code]))
    }
    family("tipsd_history_cursor", "gauge", "The newest lifecycle history cursor.")
    sample("tipsd_history_cursor", [], String(gauges.historyCursor))
    if !gauges.hostedLinks.isEmpty {
      family(
        "tipsd_hosted_links", "gauge",
        "Hosted mode: whether each PostgreSQL link is up (1) or not (0): writer (commits), reader (loads and reads), "
          + "listener (other nodes' and devices' changes).")
      for (link, up) in gauges.hostedLinks { sample("tipsd_hosted_links", [("link", link)], up ? "1" : "0") }
    }
    if let checks = gauges.repairChecks, let repairs = gauges.repairs {
      family(
        "tipsd_hosted_repair_checks_total", "counter",
        "Hosted mode: resident accounts whose merged state was compared with PostgreSQL's at the same cursor.")
      sample("tipsd_hosted_repair_checks_total", [], String(checks))
      family(
        "tipsd_hosted_repairs_total", "counter",
        "Hosted mode: accounts whose state on this node differed from PostgreSQL's and were read again (should be 0).")
      sample("tipsd_hosted_repairs_total", [], String(repairs))
    }
    if let results = gauges.webhookResults, let lag = gauges.webhookLag {
      family(
        "tipsd_webhook_deliveries_total", "counter",
        "Hosted mode: webhook delivery attempts this node made, by result (delivered: a 2xx; failed: retried later; "
          + "disabled: the endpoint was given up on).")
      for result in ["delivered", "disabled", "failed"] {
        sample("tipsd_webhook_deliveries_total", [("result", result)], String(results[result] ?? 0))
      }
      family(
        "tipsd_webhook_lag_seconds", "gauge",
        "Hosted mode: seconds the oldest undelivered webhook event has waited (as last read by the delivering node).")
      sample("tipsd_webhook_lag_seconds", [], Self.number(lag))
    }
    if let throttled = gauges.signInThrottled, let failures = gauges.signInFailures {
      family(
        "tipsd_signin_signature_failures_total", "counter", "Hosted mode: tokens whose signature did not verify.")
      sample("tipsd_signin_signature_failures_total", [], String(failures))
      family(
        "tipsd_signin_throttled_total", "counter",
        "Hosted mode: tokens refused before any signature check (--sign-in-failures spent).")
      sample("tipsd_signin_throttled_total", [], String(throttled))
    }
    if let bytes = gauges.datastoreBytes {
      family("tipsd_datastore_size_bytes", "gauge", "The datastore's size (SQLite pages; the WAL not included).")
      sample("tipsd_datastore_size_bytes", [], String(bytes))
    }
    return out
  }

  /// A label value with `\`, `"` and newlines escaped.
  static func escape(_ value: String) -> String {
    var out = ""
    for character in value {
      switch character {
      case "\\": out += "\\\\"
      case "\"": out += "\\\""
      case "\n": out += "\\n"
      default: out.append(character)
      }
    }
    return out
  }

  /// A sample value: integers without a fraction, others in shortest form.
  static func number(_ value: Double) -> String {
    if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
    if let exact = Int64(exactly: value) { return String(exact) }
    return "\(value)"
  }
}
