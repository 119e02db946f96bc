import Foundation
import Testing
import TipsFraming
import TipsJSON
import TipsTestSupport

/// The repository root (for Fuzz/ corpora and regressions).
let repositoryRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent()

/// A `/proc/PID/status` field in KiB (e.g. `VmRSS`), or nil.
func procStatus(_ pid: Int32, _ field: String) -> Int? {
  guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
  for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
    return Int(line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
  }
  return nil
}

/// The number of open file descriptors of a process.
func openFDCount(_ pid: Int32) -> Int {
  (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
}

/// How far above its baseline a daemon's VmRSS may be after an abuse (16 MiB; `TIPSD_HARDENING_RSS_MARGIN_KIB`
/// widens it, e.g. under AddressSanitizer whose quarantine keeps freed memory).
let rssMarginKiB = ProcessInfo.processInfo.environment["TIPSD_HARDENING_RSS_MARGIN_KIB"].flatMap(Int.init) ?? 16 * 1024

func json(_ text: String) -> JSONValue { try! JSONParser.parse(text) }

func errorCode(_ reply: JSONValue?) -> Int64? { reply?["error"]?["code"]?.intValue }

/// A daemon with one healthy, initialized client and the baselines the abuse and chaos tests return to.
final class Fixture {
  let daemon: Daemon
  let healthy: RPCClient
  private(set) var baselineRSS = 0
  private(set) var baselineFDs = 0
  var pid: Int32 { daemon.process.processIdentifier }

  init(_ arguments: [String] = [], datastore: String = ":memory:", directory: String? = nil) throws {
    daemon = try Daemon(arguments + ["--log-level", "warning"], directory: directory, datastore: datastore)
    healthy = try daemon.connect()
    try healthy.initialize(name: "healthy")
    try healthy.result("tips/register", ["tips": [filterTip]])
    // Warm up allocator pools and the datastore, including a second connection coming and going.
    for _ in 0..<100 { try healthy.result("events/donate", ["id": "warmup"]) }
    for _ in 0..<3 {
      let probe = try daemon.connect()
      try probe.initialize(name: "probe")
      try probe.result("tips/status")
      probe.close()
    }
    try waitForFDsToSettle()
    rebaseline()
  }

  /// Takes the current RSS and fd count as the baseline.
  func rebaseline() {
    baselineRSS = procStatus(pid, "VmRSS") ?? 0
    #expect(baselineRSS > 0, "cannot read VmRSS of \(pid)")
    baselineFDs = openFDCount(pid)
  }

  private func waitForFDsToSettle() throws {
    var last = -1
    _ = waitUntil(timeout: testTimeout) {
      let now = openFDCount(pid)
      defer { last = now }
      return now == last
    }
  }

  var rss: Int { procStatus(pid, "VmRSS") ?? 0 }

  /// The healthy client still gets answers promptly (returns the round trip in seconds).
  @discardableResult
  func checkHealthy(_ comment: Comment? = nil) throws -> Double {
    #expect(daemon.process.isRunning, "the daemon died: \(daemon.log)")
    let start = Date()
    let now = try healthy.result("clock/now", nil)
    #expect(now["now"] != nil, comment)
    let count = try healthy.result("events/donate", ["id": "healthy.ping"])
    #expect(count["count"]?.intValue ?? 0 >= 1, comment)
    return Date().timeIntervalSince(start)
  }

  /// Fds back to the baseline (within `timeout`) and RSS below baseline + `marginKiB`.
  func checkRecovered(marginKiB: Int = rssMarginKiB, fds: Bool = true, timeout: Double = testTimeout, _ what: String)
    throws
  {
    try checkHealthy(Comment(rawValue: what))
    if fds {
      let settled = waitUntil(timeout: timeout) { openFDCount(pid) <= baselineFDs }
      #expect(settled, "\(what): fds \(openFDCount(pid)) vs baseline \(baselineFDs)")
    }
    let rssNow = rss
    #expect(rssNow < baselineRSS + marginKiB, "\(what): VmRSS \(rssNow) KiB vs baseline \(baselineRSS) KiB")
  }

  func stop() { daemon.stop() }
  deinit { daemon.stop() }
}

extension RPCClient {
  /// Writes raw bytes, ignoring a peer that already closed.
  func writeIgnoringErrors(_ bytes: [UInt8]) { try? write(bytes) }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
