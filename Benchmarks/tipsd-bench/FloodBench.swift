import Foundation
import TipsClient
import TipsJSON
import TipsProtocol

// A connection flood never starves the clients already connected (#27): a healthy client on the Unix socket sends
// `tips/status` every 10 ms while two processes (`tipsd-bench flood-peer`) connect and close as fast as they can,
// on the Unix socket or on the TCP listener. tipsd beside the C fixed-reply libuv server
// (Benchmarks/baseline/uv_fixed_reply.c, listening on a Unix socket and on TCP) under the same flood, in the same run,
// in alternating rounds.

/// `tipsd-bench flood-peer unix:PATH|tcp:PORT SECONDS`: connects and closes as fast as it can for SECONDS; prints how
/// many connections it made.
func runFloodPeer(_ arguments: [String]) throws {
  guard arguments.count == 2, let seconds = Double(arguments[1]) else {
    throw BenchError("usage: tipsd-bench flood-peer unix:PATH|tcp:PORT SECONDS")
  }
  let target = arguments[0]
  let deadline = monotonic() + seconds
  var made = 0
  while monotonic() < deadline {
    for _ in 0..<64 {
      let fd = floodConnect(target)
      guard fd >= 0 else { continue }
      made += 1
      close(fd)
    }
  }
  print(made)
}

/// One connection to `unix:PATH` or `tcp:PORT` (127.0.0.1), or -1. TCP ones close with a reset (SO_LINGER 0): the
/// flood's ports never pile up in TIME_WAIT.
private func floodConnect(_ target: String) -> Int32 {
  if target.hasPrefix("unix:") {
    let path = String(target.dropFirst(5))
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return -1 }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
    }
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    if rc != 0 {
      close(fd)
      return -1
    }
    return fd
  }
  guard target.hasPrefix("tcp:"), let port = UInt16(target.dropFirst(4)) else { return -1 }
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return -1 }
  var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(port.bigEndian)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  let rc = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
  }
  if rc != 0 {
    close(fd)
    return -1
  }
  return fd
}

/// Round trips (ms) of a `tips/status` request every 10 ms on `client` for `seconds`, while `floods` flood peers run
/// against `target`; and the connections they made.
private func healthyUnderFlood(
  _ client: JSONRPCClient, target: String, floods: Int = 2, seconds: Double
) throws -> (samples: [Double], connects: Int) {
  let me = CommandLine.arguments[0]
  var peers: [(Process, Pipe)] = []
  for _ in 0..<floods {
    let process = Process()
    let pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: me)
    process.arguments = ["flood-peer", target, String(seconds)]
    process.standardOutput = pipe
    try process.run()
    peers.append((process, pipe))
  }
  usleep(100_000)  // the flood under way
  let request = Array(#"{"jsonrpc":"2.0","id":7,"method":"tips/status","params":{}}"#.utf8) + [10]
  var samples: [Double] = []
  let end = monotonic() + seconds - 0.3
  var next = monotonic()
  while monotonic() < end {
    let start = monotonic()
    try client.write(request)
    precondition(client.readRawLines(atLeast: 1) >= 1, "the healthy client's connection closed under the flood")
    samples.append((monotonic() - start) * 1000)
    next += 0.010
    let wait = next - monotonic()
    if wait > 0 { usleep(UInt32(wait * 1e6)) } else { next = monotonic() }
  }
  var connects = 0
  for (process, pipe) in peers {
    process.waitUntilExit()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    connects += Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
  }
  return (samples, connects)
}

private func quantile(_ values: [Double], _ p: Double) -> Double {
  let sorted = values.sorted()
  return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func runFloodBenchmarks() throws {
  let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
  let tipsd = ProcessInfo.processInfo.environment["TIPSD_BIN"] ?? "\(executableDirectory)/tipsd"
  let baseline = ProcessInfo.processInfo.environment["BASELINE_BIN"] ?? ".build/bench/uv_fixed_reply"
  guard FileManager.default.isExecutableFile(atPath: baseline) else {
    print("serve.flood_skipped: baseline server \(baseline) not built (run `make bench`)")
    return
  }
  let environment = ProcessInfo.processInfo.environment
  let rounds = Int(environment["FLOOD_ROUNDS"] ?? "") ?? 3
  let seconds = Double(environment["FLOOD_SECONDS"] ?? "") ?? 3
  let extra = (environment["FLOOD_TIPSD_ARGS"] ?? "").split(separator: " ").map(String.init)
  let directory = NSTemporaryDirectory() + "tipsd-bench-flood-\(getpid())"
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let catalog = environment["TIPSD_CATALOG"] ?? "catalog/demo.json"
  let basePort = freePort()
  let base = try ServerProcess(
    executable: baseline, arguments: ["\(directory)/base.sock", String(basePort)], directory: directory,
    socketPath: "\(directory)/base.sock")
  defer { base.stop() }
  let port = freePort()
  // The daemon's defaults (connection limits included), as `tipsd serve` runs with no flags.
  let server = try ServerProcess(
    executable: tipsd,
    arguments: [
      "serve", "--socket", "\(directory)/tipsd.sock", "--datastore", "\(directory)/flood.sqlite", "--catalog", catalog,
      "--log-level", "warning", "--listen", "127.0.0.1:\(port)",
    ] + extra,
    directory: directory, socketPath: "\(directory)/tipsd.sock")
  defer { server.stop() }
  usleep(200_000)
  let healthyBase = try JSONRPCClient(socketPath: base.socketPath)
  let healthy = try JSONRPCClient(socketPath: server.socketPath)
  _ = try healthy.initialize()
  var idle: [Double] = []
  for _ in 0..<200 {
    let start = monotonic()
    _ = try healthy.call("tips/status", ["ids": .array([])])
    idle.append((monotonic() - start) * 1000)
    usleep(2_000)
  }
  var figures: [String: [Double]] = [:]
  var connects: [String: Int] = [:]
  for _ in 0..<rounds {
    for (transport, baseTarget, target) in [
      ("unix", "unix:\(base.socketPath)", "unix:\(server.socketPath)"),
      ("tcp", "tcp:\(basePort)", "tcp:\(port)"),
    ] {
      let b = try healthyUnderFlood(healthyBase, target: baseTarget, seconds: seconds)
      figures["\(transport)_baseline", default: []] += b.samples
      connects["\(transport)_baseline", default: 0] += b.connects
      usleep(300_000)
      let t = try healthyUnderFlood(healthy, target: target, seconds: seconds)
      figures["\(transport)_tipsd", default: []] += t.samples
      connects["\(transport)_tipsd", default: 0] += t.connects
      usleep(300_000)
    }
  }
  func show(_ value: Double) -> String { String(format: "%.2f", value) }
  print("serve.idle_healthy_p50_ms: \(show(quantile(idle, 0.5)))")
  for transport in ["unix", "tcp"] {
    let b = figures["\(transport)_baseline"] ?? []
    let t = figures["\(transport)_tipsd"] ?? []
    print("serve.flood_\(transport)_baseline_p50_ms: \(show(quantile(b, 0.5)))")
    print("serve.flood_\(transport)_baseline_p99_ms: \(show(quantile(b, 0.99)))")
    print("serve.flood_\(transport)_healthy_p50_ms: \(show(quantile(t, 0.5)))")
    print("serve.flood_\(transport)_healthy_p99_ms: \(show(quantile(t, 0.99)))")
    print("serve.flood_\(transport)_p99_ratio: \(String(format: "%.3f", quantile(t, 0.99) / quantile(b, 0.99)))")
    print("serve.flood_\(transport)_p50_difference_ms: \(show(quantile(t, 0.5) - quantile(b, 0.5)))")
    let total = Double(rounds) * seconds
    print(
      "serve.flood_\(transport)_baseline_connects_per_sec: \(Int(Double(connects["\(transport)_baseline"] ?? 0) / total))"
    )
    print(
      "serve.flood_\(transport)_tipsd_connects_per_sec: \(Int(Double(connects["\(transport)_tipsd"] ?? 0) / total))")
  }
  print("serve.flood_p99_ratio_target: 3")
  print("serve.flood_p50_difference_ms_target: 2")
}
