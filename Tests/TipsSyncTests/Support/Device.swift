import Foundation
import TipsEngine
import TipsJSON
import TipsStore
import TipsTestSupport

/// One device of an account: a real `tipsd serve --sync` process with its own datastore and virtual clock (skewed as
/// a real device's would be), restartable on the same datastore.
final class Device {
  let name: String
  let directory: String
  let datastore: String
  let account: String
  let skew: Double
  let catalog: String
  private(set) var url: String
  private(set) var daemon: Daemon
  private(set) var client: RPCClient
  let extraArguments: [String]

  static let start: Double = 1_700_000_000

  init(
    _ name: String, url: String, account: String = "alice", skew: Double = 0, catalog: String,
    extraArguments: [String] = []
  ) throws {
    self.name = name
    self.url = url
    self.account = account
    self.skew = skew
    self.catalog = catalog
    self.extraArguments = extraArguments
    directory = temporaryDirectory()
    datastore = "\(directory)/\(name).sqlite"
    (daemon, client) = try Self.launch(
      name: name, directory: directory, datastore: datastore, url: url, account: account, catalog: catalog,
      clockStart: Self.start + skew, extra: extraArguments)
  }

  private static func launch(
    name: String, directory: String, datastore: String, url: String, account: String, catalog: String,
    clockStart: Double, extra: [String]
  ) throws -> (Daemon, RPCClient) {
    let daemon = try Daemon(
      [
        "--sync", url, "--account", account, "--device", name, "--catalog", catalog, "--clock", "virtual",
        "--clock-start", String(clockStart), "--install-id", "one-install", "--log-level", "debug",
      ] + extra, directory: directory, datastore: datastore)
    let client = try daemon.connect()
    try client.initialize(name: name)
    for (event, limit) in SyncFixture.limits {
      try client.result("events/configure", ["id": .string(event), "maxDonations": .int(Int64(limit))])
    }
    return (daemon, client)
  }

  /// A request's result; throws on an error reply.
  @discardableResult
  func call(_ method: String, _ params: JSONValue? = nil) throws -> JSONValue {
    try client.result(method, params)
  }

  func syncStatus() throws -> JSONValue { try call("sync/status") }

  /// Stops the daemon (SIGTERM) and starts it again on the same datastore, at its clock's current instant; `url`
  /// changes the server (an offline device coming online).
  func restart(url newURL: String? = nil) throws {
    let now = (try? call("clock/now")["now"]?.doubleValue) ?? nil
    client.close()
    daemon.stop(removeDirectory: false)
    try relaunch(url: newURL, clockStart: now ?? Self.start + skew)
  }

  /// Kills the daemon with SIGKILL (nothing flushed, nothing closed) and starts it again on the same datastore.
  func killAndRestart() throws {
    let now = (try? call("clock/now")["now"]?.doubleValue) ?? nil
    daemon.signal(SIGKILL)
    _ = try daemon.wait()
    client.close()
    daemon.stop(removeDirectory: false)
    try relaunch(url: nil, clockStart: now ?? Self.start + skew)
  }

  private func relaunch(url newURL: String?, clockStart: Double) throws {
    if let newURL { url = newURL }
    (daemon, client) = try Self.launch(
      name: name, directory: directory, datastore: datastore, url: url, account: account, catalog: catalog,
      clockStart: clockStart, extra: extraArguments)
  }

  /// Stops the daemon and reads what its datastore holds.
  func stopAndLoad() throws -> EngineSnapshot {
    client.close()
    daemon.stop(removeDirectory: false)
    let store = try Datastore(path: datastore)
    defer { store.close() }
    return try store.load()
  }

  func destroy() {
    client.close()
    daemon.stop(removeDirectory: true)
  }

  /// Every tip's status as the comparison needs it: status, reason, shouldDisplay, counts.
  func tipStates(_ ids: [String]) throws -> [String: JSONValue] {
    var states: [String: JSONValue] = [:]
    for tip in try call("tips/status", ["ids": .array(ids.map { .string($0) })])["tips"]?.arrayValue ?? [] {
      guard let id = tip["id"]?.stringValue else { continue }
      states[id] = [
        "status": tip["status"] ?? .null, "reason": tip["reason"] ?? .null,
        "shouldDisplay": tip["shouldDisplay"] ?? .null,
        "displayCount": tip["displayCount"] ?? .null, "displayedDuration": tip["displayedDuration"] ?? .null,
        "variant": tip["variant"] ?? .null,
      ]
    }
    return states
  }
}

/// Waits until every device has pushed everything and merged everything: empty outboxes and one cursor (the account's
/// last, since each device pulls after its own pushes). A merge can queue new operations (a display budget reached
/// by merged displays), so the condition is checked until it holds. Fails after a generous deadline (a hang guard).
func waitUntilConverged(_ devices: [Device], postgres: PostgresServer? = nil) throws {
  var last = ""
  let converged = waitUntil(timeout: testTimeout * 12) {
    guard let statuses = try? devices.map({ try $0.syncStatus() }) else { return false }
    last = statuses.map { "\($0["device"]?.stringValue ?? "?"): \($0.jsonString)" }.joined(separator: "\n")
    let cursors = Set(statuses.compactMap { $0["cursor"]?.intValue })
    guard statuses.allSatisfy({ $0["outbox"]?.intValue == 0 && $0["state"]?.stringValue == "connected" }),
      cursors.count == 1
    else { return false }
    // Equal cursors are not enough: a device whose own pushes landed after a gap keeps its cursor below them until
    // it pulls. With PostgreSQL at hand, every device must have pulled up to the account's newest operation.
    guard let postgres, let account = devices.first?.account, devices.allSatisfy({ $0.account == account }) else {
      return true
    }
    let head = try? postgres.query("SELECT last_cursor FROM tipsd.accounts WHERE account = '\(account)'")
    last += "\nPostgreSQL's newest cursor: \(head ?? "?")"
    return head.flatMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) } == cursors.first
  }
  if !converged {
    throw TestFailure(
      "devices did not converge:\n\(last)\n"
        + devices.map { "--- \($0.name)\n\($0.daemon.log.suffix(3000))" }.joined(separator: "\n"))
  }
}
