import Glibc
import Testing
import TipsTransport

/// The per-peer connection limits (#27): concurrent connections, the rate of new ones, failed sign-ins charged to the
/// rate, and the sampled log of refusals. Time is passed in: nothing here waits.
@Suite struct ConnectionLimiterTests {
  @Test func defaultsAreTheDocumentedOnes() {
    let limits = ConnectionLimits()
    #expect(limits.perPeer == 128)
    #expect(limits.ratePerPeer == 200 && limits.burstPerPeer == 400)
    #expect(limits.handshakeTimeout == 10)
    #expect(limits.acceptsPerTurn >= 1)
    #expect(ConnectionLimits.unlimited.perPeer == 0 && ConnectionLimits.unlimited.ratePerPeer == 0)
  }

  @Test func aPeerHoldsAtMostItsLimitAndReleasesFreeSlots() {
    let limiter = ConnectionLimiter(limits: ConnectionLimits(perPeer: 3, ratePerPeer: 0))
    for _ in 0..<3 { #expect(limiter.admit("uid:1", now: 0) == nil) }
    #expect(limiter.admit("uid:1", now: 0) == .perPeer(limit: 3))
    // Another peer is not affected.
    #expect(limiter.admit("uid:2", now: 0) == nil)
    limiter.release("uid:1")
    #expect(limiter.openConnections("uid:1") == 2)
    #expect(limiter.admit("uid:1", now: 0) == nil)
    #expect(limiter.admit("uid:1", now: 0) == .perPeer(limit: 3))
    #expect(limiter.refused["peer"] == 2)
    for _ in 0..<3 { limiter.release("uid:1") }
    limiter.release("uid:1")  // one too many: ignored
    #expect(limiter.openConnections("uid:1") == 0)
  }

  @Test func aPeerOpeningConnectionsTooFastIsRefusedUntilItsBucketRefills() throws {
    let limiter = ConnectionLimiter(limits: ConnectionLimits(perPeer: 0, ratePerPeer: 10))
    // A burst of twice the rate, then refused.
    for _ in 0..<20 {
      #expect(limiter.admit("ip:127.0.0.1", now: 100) == nil)
      limiter.release("ip:127.0.0.1")
    }
    let refusal = try #require(limiter.admit("ip:127.0.0.1", now: 100))
    guard case .rate(let limit, let retryAfter) = refusal else {
      Issue.record("expected a rate refusal, got \(refusal)")
      return
    }
    #expect(limit == 10 && abs(retryAfter - 0.1) < 1e-9)
    #expect(limiter.retryAfter("ip:127.0.0.1", now: 100) != nil)
    #expect(limiter.admit("ip:127.0.0.2", now: 100) == nil, "another address has its own bucket")
    // A tenth of a second later one more is allowed.
    #expect(limiter.admit("ip:127.0.0.1", now: 100.1) == nil)
    #expect(limiter.refused["rate"] == 1)
    #expect(refusal.description.contains("at most 10 a second (--peer-connection-rate)"))
    #expect(refusal.scope == "rate")
  }

  @Test func failedSignInsAreChargedToTheRate() {
    let limiter = ConnectionLimiter(limits: ConnectionLimits(perPeer: 0, ratePerPeer: 1, burstPerPeer: 3))
    #expect(limiter.charge("ip:10.0.0.1", now: 0) == nil)
    #expect(limiter.charge("ip:10.0.0.1", now: 0) == nil)
    #expect(limiter.retryAfter("ip:10.0.0.1", now: 0) == nil)
    #expect(limiter.charge("ip:10.0.0.1", now: 0) == nil)
    #expect(limiter.retryAfter("ip:10.0.0.1", now: 0) != nil, "three failures use up a burst of three")
    #expect(limiter.admit("ip:10.0.0.1", now: 0) != nil)
    #expect(limiter.openConnections("ip:10.0.0.1") == 0)
  }

  @Test func zeroMeansNoLimit() {
    let limiter = ConnectionLimiter(limits: .unlimited)
    for _ in 0..<10_000 { #expect(limiter.admit("uid:1", now: 0) == nil) }
    #expect(limiter.openConnections("uid:1") == 10_000)
    #expect(limiter.retryAfter("uid:1", now: 0) == nil)
  }

  @Test func bucketsOfQuietPeersAreForgotten() {
    let limiter = ConnectionLimiter(limits: ConnectionLimits(perPeer: 0, ratePerPeer: 100))
    for peer in 0..<1_000 {
      _ = limiter.admit("ip:10.0.\(peer / 256).\(peer % 256)", now: 0)
      limiter.release("ip:10.0.\(peer / 256).\(peer % 256)")
    }
    #expect(limiter.trackedPeers == 1_000)
    _ = limiter.admit("uid:1", now: 60)
    #expect(limiter.trackedPeers == 1)
  }

  @Test func aRepeatedLogLineIsWrittenOncePerInterval() {
    var log = SampledLog(interval: 10)
    #expect(log.shouldLog(now: 0) == (true, 0))
    for t in 1..<1_000 { #expect(log.shouldLog(now: Double(t) / 1000).log == false) }
    let next = log.shouldLog(now: 10)
    #expect(next.log && next.suppressed == 999)
    #expect(log.shouldLog(now: 10.5).log == false)
  }

  /// With one accept per loop turn, 20 clients connecting at once are all accepted (none lost, none refused), and a
  /// connection established before them is read and answered in between.
  @Test func acceptsPerTurnAreCappedAndNoConnectionIsLost() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("accept-cap")
    let server = try UnixSocketServer(loop: loop, path: path)
    server.acceptsPerTurn = 1
    var accepted = 0
    var closed = 0
    let clients = 20
    server.onConnection = { connection in
      accepted += 1
      connection.onData = { bytes in connection.write(Array(bytes)) }
      connection.onClose = { _ in
        closed += 1
        if closed == clients + 1 { server.close() }
      }
      connection.startReading()
    }
    let echoed = Locked(0)
    let thread = onNewThread {
      let first = connectClient(path)
      guard first >= 0 else { return }
      var fds: [Int32] = []
      for _ in 0..<clients { fds.append(connectClient(path)) }
      // The first connection is served while the others wait to be accepted.
      for _ in 0..<10 {
        guard writeAll(first, [1, 2, 3]) else { break }
        var reply = [UInt8](repeating: 0, count: 3)
        if read(first, &reply, 3) == 3 { echoed.update { $0 += 1 } }
      }
      for fd in fds where fd >= 0 {
        _ = writeAll(fd, [9])
        var byte: UInt8 = 0
        if read(fd, &byte, 1) == 1 { echoed.update { $0 += 1 } }
        close(fd)
      }
      close(first)
    }
    run(loop)
    #expect(thread.join())
    #expect(accepted == clients + 1)
    #expect(echoed.value == 10 + clients)
  }
}
