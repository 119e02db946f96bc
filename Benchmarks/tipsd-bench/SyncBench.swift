import Foundation
import TipsClient
import TipsJSON
import TipsTestSupport

// Sync across devices: two `tipsd serve --sync` daemons of one account through a private PostgreSQL (initdb into a
// temporary directory, a Unix socket only, as the postgres user when run as root).
// - sync.replicated_changes_per_sec: donations made on A (pipelined) per second until B has merged all of them (B's
//   subscriber sees the tip whose rule counts them become displayable) — local commit, push, NOTIFY, pull and merge.
// - sync.replication_lag_*_ms: one change at a time (a parameter flipped on A), from sending the request to A until
//   B's subscriber is notified; p50 and p99.

/// A `tipsd serve --sync` daemon.
private final class SyncDaemon {
  let process = Process()
  let socket: String

  init(tipsd: String, directory: String, name: String, url: String) throws {
    socket = "\(directory)/\(name).sock"
    process.executableURL = URL(fileURLWithPath: tipsd)
    process.arguments = [
      "serve", "--socket", socket, "--datastore", "\(directory)/\(name).sqlite", "--sync", url, "--account", "bench",
      "--device", name, "--log-level", "warning",
    ]
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    let deadline = Date().addingTimeInterval(10)
    while (try? JSONRPCClient(socketPath: socket, framing: .newline)) == nil {
      guard process.isRunning, Date() < deadline else { throw BenchError("tipsd \(name) did not start") }
      usleep(2_000)
    }
  }

  func client() throws -> JSONRPCClient {
    let client = try JSONRPCClient(socketPath: socket, framing: .newline, timeout: 120)
    try client.initialize(name: "tipsd-bench")
    return client
  }

  func stop() {
    process.terminate()
    process.waitUntilExit()
  }
}

private func percentile(_ values: [Double], _ p: Double) -> Double {
  let sorted = values.sorted()
  return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func runSyncBenchmarks() throws {
  let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
  let tipsd = ProcessInfo.processInfo.environment["TIPSD_BIN"] ?? "\(executableDirectory)/tipsd"
  // The tests' private PostgreSQL (TipsTestSupport): initdb into a temporary directory, a Unix socket only, as the
  // postgres user when run as root, its programs run from the server's own directory.
  guard PostgresServer.findBinaries() != nil else {
    print("sync.skipped: PostgreSQL is not installed (apt install postgresql)")
    return
  }
  let postgres = try PostgresServer()
  defer { postgres.destroy() }
  let directory = NSTemporaryDirectory() + "tipsd-bench-sync-\(getpid())"
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let a = try SyncDaemon(tipsd: tipsd, directory: directory, name: "a", url: postgres.url)
  defer { a.stop() }
  let b = try SyncDaemon(tipsd: tipsd, directory: directory, name: "b", url: postgres.url)
  defer { b.stop() }

  let changes = 20_000
  let tips: JSONValue = [
    "tips": [
      ["id": "flag.tip", "title": "Flag", "rules": [["parameter": "flag", "eq": true]]],
      [
        "id": "count.tip", "title": "Count",
        "rules": [["event": "bench.event", "count": ["gte": .int(Int64(changes))]]],
      ],
    ]
  ]
  let writer = try a.client()
  let observer = try b.client()
  for client in [writer, observer] {
    try client.result("parameters/define", ["parameters": [["id": "flag", "default": false]]])
    try client.result("tips/register", tips)
  }
  try observer.result("tips/observe", ["ids": ["flag.tip", "count.tip"]])

  // Throughput: pipelined donations on A, until B's count tip turns on.
  let request = Array(#"{"jsonrpc":"2.0","id":1,"method":"events/donate","params":{"id":"bench.event"}}"#.utf8) + [0x0A]
  let started = monotonic()
  var sent = 0
  var answered = 0
  while answered < changes {
    let batch = min(256, changes - sent)
    if batch > 0 {
      try writer.write(Array([[UInt8]](repeating: request, count: batch).joined()))
      sent += batch
    }
    answered += writer.readRawLines(atLeast: min(changes - answered, max(1, sent - answered - 512)))
  }
  guard let shown = try observer.nextNotification("tips/shouldDisplayChanged", timeout: 300),
    shown["params"]?["id"] == "count.tip"
  else { throw BenchError("B never merged all \(changes) donations") }
  let throughput = Double(changes) / (monotonic() - started)

  // Lag: one change at a time.
  var lags: [Double] = []
  for index in 0..<300 {
    let value = index % 2 == 0
    let sentAt = monotonic()
    try writer.result("parameters/set", ["id": "flag", "value": .bool(value)])
    guard let note = try observer.nextNotification("tips/shouldDisplayChanged", timeout: 60),
      note["params"]?["shouldDisplay"]?.boolValue == value
    else { throw BenchError("B missed change \(index)") }
    lags.append((monotonic() - sentAt) * 1000)
  }
  print("sync.replicated_changes_per_sec: \(String(format: "%.0f", throughput))")
  print("sync.replication_lag_p50_ms: \(String(format: "%.2f", percentile(lags, 0.5)))")
  print("sync.replication_lag_p99_ms: \(String(format: "%.2f", percentile(lags, 0.99)))")
  print("sync.replication_lag_samples: \(lags.count)")
}
