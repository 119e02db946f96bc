import Foundation
import Testing
import TipsJSON
import TipsTestSupport

/// A blocking TCP connection to 127.0.0.1:`port` (receive timeout: the hang guard), or -1.
private func tcpConnect(_ port: Int) -> Int32 {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return -1 }
  var timeout = timeval(tv_sec: Int(testTimeout), tv_usec: 0)
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
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

/// Everything the peer sends until it closes (or the hang guard passes: then `closed` is false).
private func readToClose(_ fd: Int32) -> (text: String, closed: Bool) {
  var bytes: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 4096)
  while true {
    let n = read(fd, &buffer, buffer.count)
    if n > 0 {
      bytes += buffer[0..<n]
    } else {
      return (String(decoding: bytes, as: UTF8.self), n == 0 || errno == ECONNRESET)
    }
  }
}

/// `GET /healthz` on 127.0.0.1:`port`: the whole response, or "" when nobody answers.
private func healthz(_ port: Int) -> String {
  let fd = tcpConnect(port)
  guard fd >= 0 else { return "" }
  defer { close(fd) }
  let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
  _ = request.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
  return readToClose(fd).text
}

extension Hardening {
  /// A connection flood never starves the clients already connected (#27). The floods are bounded (a count of
  /// connections, two threads, loopback only) and the checks are on behaviour, never on time: every request of the
  /// healthy client is answered without error and in order, no established session is dropped, every acknowledged
  /// donation is kept, and the daemon's descriptors return to their baseline.
  @Suite struct Floods {
    /// Connects and closes `cycles` times on each of two threads (`connect` makes one connection), while the healthy
    /// client donates `flood.ping` one request at a time and a second established client stays subscribed.
    private func flood(
      _ fixture: Fixture, cycles: Int, _ what: String, connect: @escaping @Sendable () -> Int32
    ) throws {
      let bystander = try fixture.daemon.connect()
      try bystander.initialize(name: "bystander")
      let shared = Shared()
      let thread = Thread {
        onThreads(2) { _ in
          for k in 0..<cycles {
            let fd = connect()
            guard fd >= 0 else {
              shared.add("failed")
              continue
            }
            if k % 4 == 0 {
              // Some say something before going: a request half sent, or a whole one left unread.
              let text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tips/status\"}\nGET / HTT"
              _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            }
            close(fd)
            shared.add("cycles")
          }
        }
        shared.add("done")
      }
      thread.start()
      var lifetimes: [Int64] = []
      while shared["done"] == 0 {
        lifetimes.append(try fixture.healthy.result("events/donate", ["id": "flood.ping"])["lifetime"]?.intValue ?? -1)
      }
      print("hardening.flood.\(what): \(shared["cycles"]) connections, \(lifetimes.count) healthy round trips")
      #expect(shared["cycles"] + shared["failed"] == 2 * cycles)
      #expect(lifetimes == (0..<lifetimes.count).map { Int64($0 + 1) }, "every healthy request answered, in order")
      // No acknowledged donation lost, and the established bystander still served.
      let status = try bystander.result("events/donate", ["id": "flood.ping"])
      #expect(status["lifetime"]?.intValue == Int64(lifetimes.count + 1), "\(what): every acknowledged donation kept")
      bystander.close()
      try fixture.checkRecovered(what)
    }

    @Test func aUnixSocketFloodNeverStarvesTheClientsAlreadyConnected() throws {
      // The default limits: most of the flood is refused with -32010.
      let fixture = try Fixture()
      let path = fixture.daemon.socketPath!
      try flood(fixture, cycles: 1_500, "unix") {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
          for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let rc = withUnsafePointer(to: &address) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
          }
        }
        if rc != 0 {
          close(fd)
          return -1
        }
        return fd
      }
      #expect(fixture.daemon.process.isRunning)
    }

    @Test func aTCPFloodNeverStarvesTheClientsAlreadyConnected() throws {
      let port = freeLoopbackPort()
      let fixture = try Fixture(["--listen", "127.0.0.1:\(port)"])
      try flood(fixture, cycles: 1_500, "tcp") { tcpConnect(port) }
      // The listener still answers once the flood is over (its rate refilled).
      let answered = waitUntil { healthz(port).hasPrefix("HTTP/1.1 200") }
      #expect(answered, "GET /healthz after the flood")
    }

    /// A peer holding --max-connections-per-peer connections gets -32010 (scope peer) on the next one, then is
    /// admitted again once one of them closed.
    @Test func aPeerOverItsConnectionLimitIsRefusedWithTooManyConnections() throws {
      let fixture = try Fixture(["--max-connections-per-peer", "3"])
      // The healthy client is one of the three.
      var held = [try fixture.daemon.connect(), try fixture.daemon.connect()]
      for client in held { try client.initialize(name: "held") }
      let extra = try fixture.daemon.connect()
      let (messages, eof) = extra.readUntilEOF()
      #expect(eof)
      let error = messages.first?["error"]
      #expect(messages.count == 1 && errorCode(messages.first) == -32010, "\(messages)")
      #expect(error?["data"]?["scope"] == "peer" && error?["data"]?["limit"] == 3)
      #expect(error?["data"]?["retryAfter"] == .null)
      #expect(error?["message"]?.stringValue?.contains("--max-connections-per-peer") == true, "\(messages)")
      extra.close()
      held.removeLast().close()
      let admitted = waitUntil {
        guard let client = try? fixture.daemon.connect(), (try? client.initialize(name: "again")) != nil else {
          return false
        }
        held.append(client)
        return true
      }
      #expect(admitted)
      held.forEach { $0.close() }
      try fixture.checkHealthy("per-peer limit")
    }

    /// A peer opening connections faster than --peer-connection-rate gets -32010 (scope rate, retryAfter) on the
    /// ones over its burst; the connections it holds are not affected.
    @Test func aPeerOverItsConnectionRateIsRefusedWithRetryAfter() throws {
      // 0.01 a second, bursts of one: once the daemon's readiness probes used the burst, every new one is refused.
      let daemon = try Daemon(["--peer-connection-rate", "0.01", "--log-level", "warning"])
      defer { daemon.stop() }
      var refusals: [JSONValue] = []
      for _ in 0..<5 {
        let client = try daemon.connect()
        let (messages, _) = client.readUntilEOF(timeout: 0.5)
        refusals += messages.filter { errorCode($0) == -32010 }
        client.close()
      }
      #expect(refusals.count >= 4, "\(refusals)")
      for refusal in refusals {
        let data = refusal["error"]?["data"]
        #expect(data?["scope"] == "rate" && data?["limit"]?.doubleValue == 0.01)
        #expect((data?["retryAfter"]?.doubleValue ?? 0) > 0)
        #expect(refusal["error"]?["message"]?.stringValue?.contains("--peer-connection-rate") == true)
      }
      #expect(daemon.process.isRunning)
    }

    /// On the TCP listener the same limits answer `429 Too Many Requests` and close; a connection that never sends
    /// its request is closed after --handshake-timeout, and frees its peer's slot.
    @Test func aTCPPeerOverItsLimitGets429AndSilentPeersAreTimedOut() throws {
      let port = freeLoopbackPort()
      // (A Daemon, not a Fixture: the limit of two holds on the Unix socket too, where the Fixture's clients are.)
      let daemon = try Daemon([
        "--listen", "127.0.0.1:\(port)", "--max-connections-per-peer", "2", "--handshake-timeout", "1",
        "--log-level", "warning",
      ])
      defer { daemon.stop() }
      let pid = daemon.process.processIdentifier
      // The TCP listener opens just after the socket: wait for it, then for the probe's connection to be gone.
      #expect(waitUntil { healthz(port).hasPrefix("HTTP/1.1 200") })
      var last = -1
      _ = waitUntil {
        usleep(50_000)
        defer { last = openFDCount(pid) }
        return openFDCount(pid) == last
      }
      let baselineFDs = openFDCount(pid)
      let silent = [tcpConnect(port), tcpConnect(port)]
      #expect(silent.allSatisfy { $0 >= 0 })
      let extra = tcpConnect(port)
      let refused = readToClose(extra)
      close(extra)
      #expect(refused.closed)
      #expect(refused.text.hasPrefix("HTTP/1.1 429 Too Many Requests"), "\(refused.text)")
      #expect(refused.text.contains("--max-connections-per-peer"), "\(refused.text)")
      // The silent ones (one with half a request) are closed by the daemon, not by us.
      _ = "GET / HTTP/1.1\r\nHost: 127".utf8CString.withUnsafeBufferPointer {
        write(silent[1], $0.baseAddress, $0.count - 1)
      }
      for fd in silent {
        let (text, closed) = readToClose(fd)
        #expect(closed && !text.hasPrefix("HTTP/1.1 2"), "a silent peer was closed: \(text)")
        close(fd)
      }
      // Their slots are free again.
      let answer = healthz(port)
      #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
      let settled = waitUntil { openFDCount(daemon.process.processIdentifier) <= baselineFDs }
      #expect(settled, "fds \(openFDCount(daemon.process.processIdentifier)) vs baseline \(baselineFDs)")
    }
  }
}
