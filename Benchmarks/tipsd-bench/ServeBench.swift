import Foundation
import TipsClient
import TipsJSON
import TipsProtocol
import TipsTransport

// `tipsd serve` over a Unix socket against the practical limit: a minimal C libuv server that answers each line
// with a fixed reply (Benchmarks/baseline/uv_fixed_reply.c, built by `make bench`). Both run as separate
// processes; the load comes from this process on one connection.

/// A spawned server process and its socket.
final class ServerProcess {
  let process = Process()
  let socketPath: String
  let directory: String

  init(executable: String, arguments: [String], directory: String, socketPath: String) throws {
    self.directory = directory
    self.socketPath = socketPath
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    let deadline = Date().addingTimeInterval(10)
    while !FileManager.default.fileExists(atPath: socketPath) {
      guard process.isRunning, Date() < deadline else { throw BenchError("\(executable) did not start") }
      usleep(2_000)
    }
  }

  /// Resident memory in KiB (VmRSS).
  var residentKiB: Int {
    guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else {
      return 0
    }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
      return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
  }

  func stop() {
    process.terminate()
    process.waitUntilExit()
  }
}

struct BenchError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// The shared blocking client, counting newline-framed replies without parsing them (the load generator's own cost
/// stays out of the figures).
private typealias LineConnection = JSONRPCClient

extension JSONRPCClient {
  fileprivate convenience init(path: String) throws {
    try self.init(socketPath: path, framing: .newline)
  }

  fileprivate func send(_ bytes: [UInt8]) {
    do {
      try write(bytes)
    } catch {
      preconditionFailure("send failed: \(error)")
    }
  }

  fileprivate func readLines(atLeast count: Int) -> Int {
    let got = readRawLines(atLeast: count)
    precondition(got >= count, "connection closed")
    return got
  }
}

private func donateRequest(_ id: Int, event: String = "search.opened") -> [UInt8] {
  Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"events/donate","params":{"id":"\#(event)"}}"#.utf8) + [10]
}

private let initializeRequest =
  Array(
    ([
      "jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": InitializeRequest(clientName: "bench").encodedParams ?? [:],
    ]
      as JSONValue).serialized()) + [10]

/// Requests per second with up to `window` requests in flight, sent `batch` at a time (donations of `event`).
private func pipelined(
  _ path: String, requests: Int, window: Int = 512, batch: Int = 64, event: String = "search.opened"
) throws -> Double {
  let connection = try LineConnection(path: path)
  connection.send(initializeRequest)
  _ = connection.readLines(atLeast: 1)
  return pipelinedRate(
    requests: requests, window: window, batch: batch, request: { donateRequest($0, event: event) },
    send: connection.send, receive: { connection.readLines(atLeast: 1) })
}

/// `tipsd-bench load SOCKET [REQUESTS] [WINDOW] [EVENT]`: pipelined donations against a running daemon, for
/// profiling it (`perf record -p PID`) under the bench's own load; prints the rate. EVENT `filter.used` is the demo
/// catalog's goal event (every donation a history entry, as in the history suite).
func runLoad(_ arguments: [String]) throws {
  guard let path = arguments.first else {
    throw BenchError("usage: tipsd-bench load SOCKET [REQUESTS] [WINDOW] [EVENT]")
  }
  let requests = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
  let window = arguments.count > 2 ? Int(arguments[2]) ?? 64 : 64
  let event = arguments.count > 3 ? arguments[3] : "search.opened"
  print("load.donate_per_sec: \(format(try pipelined(path, requests: requests, window: window, event: event), 0))")
}

/// `tipsd-bench load-ws PORT TOKEN [REQUESTS]`: the same over WebSocket, against `tipsd serve --listen 127.0.0.1:PORT`.
func runWebSocketLoad(_ arguments: [String]) throws {
  guard arguments.count >= 2, let port = Int(arguments[0]) else {
    throw BenchError("usage: tipsd-bench load-ws PORT TOKEN [REQUESTS]")
  }
  let requests = arguments.count > 2 ? Int(arguments[2]) ?? 1_000_000 : 1_000_000
  print(
    "load.websocket_donate_per_sec: \(format(try pipelinedWebSocket(port: port, token: arguments[1], requests: requests), 0))"
  )
}

private func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

/// Sets the CPU affinity of processes (`taskset -p -c LIST PID`).
private func pin(_ pids: [Int32], to cpus: String) {
  for pid in pids {
    let taskset = Process()
    taskset.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
    taskset.arguments = ["-p", "-c", cpus, String(pid)]
    taskset.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    try? taskset.run()
    taskset.waitUntilExit()
  }
}

private func percentile(_ values: [Double], _ p: Double) -> Double {
  let sorted = values.sorted()
  return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// Round trips of one request at a time, in microseconds.
private func oneAtATime(_ path: String, requests: Int) throws -> [Double] {
  let connection = try LineConnection(path: path)
  connection.send(initializeRequest)
  _ = connection.readLines(atLeast: 1)
  var samples: [Double] = []
  samples.reserveCapacity(requests)
  for i in 0..<requests {
    let request = donateRequest(i + 1)
    let start = monotonic()
    connection.send(request)
    _ = connection.readLines(atLeast: 1)
    samples.append((monotonic() - start) * 1e6)
  }
  return samples
}

/// A port nobody listens on now (the kernel's choice for a socket bound to port 0).
func freePort() -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  _ = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
      _ = bind(fd, pointer, length)
      return getsockname(fd, pointer, &length)
    }
  }
  return Int(UInt16(bigEndian: address.sin_port))
}

/// A donation as a WebSocket text message: the line without its newline.
private func donateText(_ id: Int) -> [UInt8] { Array(donateRequest(id).dropLast()) }

/// Requests per second over the WebSocket listener, with up to `window` requests in flight (one per frame).
private func pipelinedWebSocket(port: Int, token: String, requests: Int, window: Int = 512, batch: Int = 64) throws
  -> Double
{
  let connection = try WebSocketLoad(port: port, token: token)
  connection.send(WebSocketLoad.frame(Array(initializeRequest.dropLast())))
  _ = connection.readFrames(atLeast: 1)
  return pipelinedRate(
    requests: requests, window: window, batch: batch, request: { WebSocketLoad.frame(donateText($0)) },
    send: connection.send, receive: { connection.readFrames(atLeast: 1) })
}

/// Round trips of one request at a time over the WebSocket listener, in microseconds.
private func oneAtATimeWebSocket(port: Int, token: String, requests: Int) throws -> [Double] {
  let connection = try WebSocketLoad(port: port, token: token)
  connection.send(WebSocketLoad.frame(Array(initializeRequest.dropLast())))
  _ = connection.readFrames(atLeast: 1)
  var samples: [Double] = []
  for i in 0..<requests {
    let frame = WebSocketLoad.frame(donateText(i + 1))
    let start = monotonic()
    connection.send(frame)
    _ = connection.readFrames(atLeast: 1)
    samples.append((monotonic() - start) * 1e6)
  }
  return samples
}

private func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

func runServeBenchmarks() throws {
  let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
  let tipsd = ProcessInfo.processInfo.environment["TIPSD_BIN"] ?? "\(executableDirectory)/tipsd"
  let baseline = ProcessInfo.processInfo.environment["BASELINE_BIN"] ?? ".build/bench/uv_fixed_reply"
  guard FileManager.default.isExecutableFile(atPath: baseline) else {
    print("serve.skipped: baseline server \(baseline) not built (run `make bench`)")
    return
  }
  let directory = NSTemporaryDirectory() + "tipsd-bench-\(getpid())"
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let catalog = ProcessInfo.processInfo.environment["TIPSD_CATALOG"] ?? "catalog/demo.json"

  // The servers run at once and are measured in alternating rounds, so drift in the machine's state (other load,
  // CPU frequency) affects them alike.
  let base = try ServerProcess(
    executable: baseline, arguments: ["\(directory)/base.sock"], directory: directory,
    socketPath: "\(directory)/base.sock")
  defer { base.stop() }
  let port = freePort()
  let server = try ServerProcess(
    executable: tipsd,
    arguments: [
      "serve", "--socket", "\(directory)/tipsd.sock", "--datastore", "\(directory)/bench.sqlite", "--catalog", catalog,
      "--log-level", "warning", "--max-connections", "1100", "--listen", "127.0.0.1:\(port)",
      // 1,000 idle connections from this one uid, opened as fast as it can: the per-peer limits are off here.
      "--max-connections-per-peer", "0", "--peer-connection-rate", "0",
    ],
    directory: directory, socketPath: "\(directory)/tipsd.sock")
  defer { server.stop() }
  // Redis, the peer doing the same durable work (RedisPeer.swift), when installed.
  var redis: RedisPeer?
  if let executable = RedisPeer.executable() {
    let redisDirectory = "\(directory)/redis"
    try FileManager.default.createDirectory(atPath: redisDirectory, withIntermediateDirectories: true)
    redis = try RedisPeer(executable: executable, directory: redisDirectory)
  }
  defer { redis?.stop() }
  usleep(200_000)
  let token = try String(contentsOfFile: "\(directory)/token", encoding: .utf8).trimmingCharacters(
    in: .whitespacesAndNewlines)
  let idleKiB = server.residentKiB
  _ = try pipelined(base.socketPath, requests: 20_000)  // warm-up
  _ = try pipelined(server.socketPath, requests: 20_000)
  _ = try pipelinedWebSocket(port: port, token: token, requests: 20_000)
  if let redis { _ = try pipelinedRedis(redis.socketPath, requests: 20_000, window: 64) }
  var baseRates: [Double] = []
  var rates: [Double] = []
  var webRates: [Double] = []
  var baseRates64: [Double] = []
  var rates64: [Double] = []
  var redisRates64: [Double] = []
  var baseSamples: [Double] = []
  var samples: [Double] = []
  var webSamples: [Double] = []
  var baseSamplesUnpinned: [Double] = []
  var samplesUnpinned: [Double] = []
  // Redis is left unpinned: it is measured only on both cores.
  let processes = [getpid(), base.process.processIdentifier, server.process.processIdentifier]
  let allCPUs = "0-\(max(0, sysconf(Int32(_SC_NPROCESSORS_ONLN)) - 1))"
  for _ in 0..<5 {
    // Throughput on both cores; latency with client and server on one core, where a round trip is a context
    // switch rather than a cross-CPU wake-up of a halted virtual CPU (which varies from 5 to 100 µs here), and
    // again unpinned (what a client sees by default).
    pin(processes, to: allCPUs)
    baseRates.append(try pipelined(base.socketPath, requests: 100_000))
    rates.append(try pipelined(server.socketPath, requests: 40_000))
    webRates.append(try pipelinedWebSocket(port: port, token: token, requests: 40_000))
    baseRates64.append(try pipelined(base.socketPath, requests: 100_000, window: 64))
    rates64.append(try pipelined(server.socketPath, requests: 40_000, window: 64))
    if let redis { redisRates64.append(try pipelinedRedis(redis.socketPath, requests: 40_000, window: 64)) }
    baseSamplesUnpinned += try oneAtATime(base.socketPath, requests: 1_000)
    samplesUnpinned += try oneAtATime(server.socketPath, requests: 1_000)
    pin(processes, to: "0")
    baseSamples += try oneAtATime(base.socketPath, requests: 1_000)
    samples += try oneAtATime(server.socketPath, requests: 1_000)
    webSamples += try oneAtATimeWebSocket(port: port, token: token, requests: 1_000)
  }
  pin(processes, to: allCPUs)
  let baseThroughput = median(baseRates)
  let throughput = median(rates)
  let baseLatency = (median: median(baseSamples), p99: percentile(baseSamples, 0.99))
  let latency = (median: median(samples), p99: percentile(samples, 0.99))
  let baseLatencyUnpinned = median(baseSamplesUnpinned)
  let latencyUnpinned = median(samplesUnpinned)

  // Idle connections: each initialized, then left alone.
  let before = server.residentKiB
  var idle: [LineConnection] = []
  for _ in 0..<1_000 {
    let connection = try LineConnection(path: server.socketPath)
    connection.send(initializeRequest)
    _ = connection.readLines(atLeast: 1)
    idle.append(connection)
  }
  usleep(100_000)
  let perConnection = Double(server.residentKiB - before) * 1024 / Double(idle.count)
  idle.removeAll()

  print("serve.baseline_pipelined_req_per_sec: \(format(baseThroughput, 0))")
  print("serve.tipsd_pipelined_donate_per_sec: \(format(throughput, 0))")
  print("serve.pipelined_ratio: \(format(throughput / baseThroughput, 3))")
  print("serve.pipelined_ratio_target: 0.5")
  print("serve.baseline_one_at_a_time_median_us: \(format(baseLatency.median))")
  print("serve.tipsd_one_at_a_time_median_us: \(format(latency.median))")
  print("serve.baseline_one_at_a_time_p99_us: \(format(baseLatency.p99))")
  print("serve.tipsd_one_at_a_time_p99_us: \(format(latency.p99))")
  print("serve.latency_ratio: \(format(latency.median / baseLatency.median, 3))")
  print("serve.latency_ratio_target: 1.5")
  print("serve.latency_pinned_to_one_cpu: 1")
  print("serve.baseline_one_at_a_time_unpinned_median_us: \(format(baseLatencyUnpinned))")
  print("serve.tipsd_one_at_a_time_unpinned_median_us: \(format(latencyUnpinned))")
  print("serve.latency_ratio_unpinned: \(format(latencyUnpinned / baseLatencyUnpinned, 3))")
  print("serve.latency_ratio_unpinned_target: 1.5")
  let baseThroughput64 = median(baseRates64)
  let throughput64 = median(rates64)
  print("serve.baseline_pipelined_w64_req_per_sec: \(format(baseThroughput64, 0))")
  print("serve.tipsd_pipelined_w64_donate_per_sec: \(format(throughput64, 0))")
  print("serve.pipelined_ratio_w64: \(format(throughput64 / baseThroughput64, 3))")
  print("serve.pipelined_ratio_w64_target: 0.5")
  if redis != nil {
    let redisThroughput = median(redisRates64)
    print("serve.redis_eval_per_sec: \(format(redisThroughput, 0))")
    print("serve.redis_ratio: \(format(throughput64 / redisThroughput, 3))")
    print("serve.redis_ratio_target: 2.0")
  } else {
    print("serve.redis_skipped: redis-server not installed (make bench-deps installs it)")
  }
  let webThroughput = median(webRates)
  let webLatency = median(webSamples)
  print("serve.websocket_pipelined_donate_per_sec: \(format(webThroughput, 0))")
  print("serve.websocket_throughput_ratio: \(format(webThroughput / throughput, 3))")
  print("serve.websocket_throughput_ratio_target: 0.7")
  print("serve.websocket_one_at_a_time_median_us: \(format(webLatency))")
  print("serve.websocket_one_at_a_time_p99_us: \(format(percentile(webSamples, 0.99)))")
  print("serve.websocket_latency_ratio: \(format(webLatency / latency.median, 3))")
  print("serve.websocket_latency_ratio_target: 1.3")
  print("serve.idle_rss_mb_demo_catalog: \(format(Double(idleKiB) / 1024))")
  print("serve.idle_rss_mb_target: 64")
  print("serve.bytes_per_idle_connection: \(format(perConnection, 0))")
  print("serve.bytes_per_idle_connection_target: 65536")
  try runFloorBenchmarks()
}

/// tipsd against the durable floor (issue #26): a C libuv server doing the least work tipsd's durability contract needs
/// (Benchmarks/baseline/uv_durable_floor.c: find the request's id, append 8 bytes a donation to the turn's one packed
/// row, commit it once per loop turn in SQLite with WAL and synchronous=NORMAL, reply after COMMIT). Both servers on
/// CPU 1 and this load generator on CPU 0, in alternating rounds (floor-tipsd-tipsd-floor); the figures are medians
/// over the rounds and each ratio is taken within one run.
func runFloorBenchmarks() throws {
  let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
  let tipsd = ProcessInfo.processInfo.environment["TIPSD_BIN"] ?? "\(executableDirectory)/tipsd"
  let floorBinary = ProcessInfo.processInfo.environment["FLOOR_BIN"] ?? ".build/bench/uv_durable_floor"
  guard FileManager.default.isExecutableFile(atPath: floorBinary) else {
    print("serve.floor_skipped: durable floor server \(floorBinary) not built (run `make bench`)")
    return
  }
  let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
  let directory = NSTemporaryDirectory() + "tipsd-bench-floor-\(getpid())"
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let catalog = ProcessInfo.processInfo.environment["TIPSD_CATALOG"] ?? "catalog/demo.json"
  let floor = try ServerProcess(
    executable: floorBinary, arguments: ["\(directory)/floor.sock", "\(directory)/floor.sqlite"],
    directory: directory, socketPath: "\(directory)/floor.sock")
  defer { floor.stop() }
  let server = try ServerProcess(
    executable: tipsd,
    arguments: [
      "serve", "--socket", "\(directory)/tipsd.sock", "--datastore", "\(directory)/bench.sqlite", "--catalog", catalog,
      "--log-level", "warning",
    ],
    directory: directory, socketPath: "\(directory)/tipsd.sock")
  defer { server.stop() }
  if cpus >= 2 {
    pin([getpid()], to: "0")
    pin([floor.process.processIdentifier, server.process.processIdentifier], to: "1")
  }
  defer { if cpus >= 2 { pin([getpid()], to: "0-\(cpus - 1)") } }
  usleep(200_000)
  _ = try pipelined(floor.socketPath, requests: 20_000, window: 64)  // warm-up
  _ = try pipelined(server.socketPath, requests: 20_000, window: 64)
  var floorRates: [Double] = []
  var rates: [Double] = []
  var ratios: [Double] = []
  var floorMedians: [Double] = []
  var medians: [Double] = []
  var latencyRatios: [Double] = []
  for _ in 0..<7 {
    let f1 = try pipelined(floor.socketPath, requests: 40_000, window: 64)
    let t1 = try pipelined(server.socketPath, requests: 40_000, window: 64)
    let t2 = try pipelined(server.socketPath, requests: 40_000, window: 64)
    let f2 = try pipelined(floor.socketPath, requests: 40_000, window: 64)
    let f = 2 / (1 / f1 + 1 / f2)
    let t = 2 / (1 / t1 + 1 / t2)
    floorRates.append(f)
    rates.append(t)
    ratios.append(t / f)
    let fl1 = try oneAtATime(floor.socketPath, requests: 500)
    let tl1 = try oneAtATime(server.socketPath, requests: 500)
    let tl2 = try oneAtATime(server.socketPath, requests: 500)
    let fl2 = try oneAtATime(floor.socketPath, requests: 500)
    let fm = median(fl1 + fl2)
    let tm = median(tl1 + tl2)
    floorMedians.append(fm)
    medians.append(tm)
    latencyRatios.append(tm / fm)
  }
  print("serve.floor_pinned: \(cpus >= 2 ? "servers cpu 1, client cpu 0" : "no (one cpu)")")
  print("serve.floor_pipelined_w64_donate_per_sec: \(format(median(floorRates), 0))")
  print("serve.floor_tipsd_pipelined_w64_donate_per_sec: \(format(median(rates), 0))")
  print("serve.floor_ratio_w64: \(format(median(ratios), 3))")
  print(
    "serve.floor_ratio_w64_quartiles: \(format(percentile(ratios, 0.25), 3)) \(format(percentile(ratios, 0.75), 3))")
  print("serve.floor_ratio_w64_target: 0.7")
  print("serve.floor_one_at_a_time_median_us: \(format(median(floorMedians)))")
  print("serve.floor_tipsd_one_at_a_time_median_us: \(format(median(medians)))")
  print("serve.floor_latency_ratio: \(format(median(latencyRatios), 3))")
  print(
    "serve.floor_latency_ratio_quartiles: \(format(percentile(latencyRatios, 0.25), 3)) \(format(percentile(latencyRatios, 0.75), 3))"
  )
  print("serve.floor_latency_ratio_target: 1.1")
}

/// What recording the lifecycle history costs (issue #13): pipelined donations of a goal event (`filter.used`, the
/// demo catalog's filter tip's goal: every donation is a history entry, the worst case) on a daemon that records
/// history against one started with `--history-days 0`, in alternating rounds, one run.
func runHistoryBenchmarks() throws {
  let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
  let tipsd = ProcessInfo.processInfo.environment["TIPSD_BIN"] ?? "\(executableDirectory)/tipsd"
  let catalog = ProcessInfo.processInfo.environment["TIPSD_CATALOG"] ?? "catalog/demo.json"
  let directory = NSTemporaryDirectory() + "tipsd-bench-history-\(getpid())"
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  func start(_ name: String, _ extra: [String]) throws -> ServerProcess {
    try ServerProcess(
      executable: tipsd,
      arguments: [
        "serve", "--socket", "\(directory)/\(name).sock", "--datastore", "\(directory)/\(name).sqlite", "--catalog",
        catalog, "--log-level", "warning",
      ] + extra,
      directory: directory, socketPath: "\(directory)/\(name).sock")
  }
  let recording = try start("history", ["--app-closed-event", "app.backgrounded"])
  defer { recording.stop() }
  let baseline = try start("nohistory", ["--history-days", "0"])
  defer { baseline.stop() }
  // The client on one core, both daemons on the other (one of them busy at a time): neither daemon ever shares a core
  // with the client, which on this 2-core machine otherwise happens in some runs and not others.
  let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
  if cpus >= 2 {
    pin([getpid()], to: "0")
    pin([recording.process.processIdentifier, baseline.process.processIdentifier], to: "1")
  }
  defer { if cpus >= 2 { pin([getpid()], to: "0-\(cpus - 1)") } }
  _ = try pipelined(recording.socketPath, requests: 20_000, event: "filter.used")
  _ = try pipelined(baseline.socketPath, requests: 20_000, event: "filter.used")
  // Rounds of four runs back to back, recording-baseline-baseline-recording (ABBA): the machine's drifting load — this
  // is a shared 2-core machine — and any advantage of going first or second affect both daemons alike within a
  // round. The figure is the median over rounds of 1 − (recording's requests per second / the baseline's).
  var on: [Double] = []
  var off: [Double] = []
  var ratios: [Double] = []
  for _ in 0..<31 {
    let a1 = try pipelined(recording.socketPath, requests: 40_000, event: "filter.used")
    let b1 = try pipelined(baseline.socketPath, requests: 40_000, event: "filter.used")
    let b2 = try pipelined(baseline.socketPath, requests: 40_000, event: "filter.used")
    let a2 = try pipelined(recording.socketPath, requests: 40_000, event: "filter.used")
    // Rates of equal request counts: the round's rate is the harmonic mean (total requests / total time).
    let a = 2 / (1 / a1 + 1 / a2)
    let b = 2 / (1 / b1 + 1 / b2)
    on.append(a)
    off.append(b)
    ratios.append(1 - a / b)
  }
  print("serve.goal_donate_per_sec_history: \(format(median(on), 0))")
  print("serve.goal_donate_per_sec_no_history: \(format(median(off), 0))")
  print("serve.history_overhead_ratio: \(format(median(ratios), 3))")
  print(
    "serve.history_overhead_ratio_quartiles: \(format(percentile(ratios, 0.25), 3)) \(format(percentile(ratios, 0.75), 3))"
  )
  print("serve.history_overhead_ratio_target: 0.1")
  try storeHistoryFigures()
}
