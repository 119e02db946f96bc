import Foundation
import Testing
import TipsFraming
import TipsJSON
import TipsTestSupport

extension Hardening {
  @Suite struct Resources {
    /// A client that stops reading: its pipelined requests are no longer read (input back-pressure), and the
    /// notifications it is owed (tips/actionPerformed, never coalesced) pile up until the queue passes `--queue-limit`
    /// and it is disconnected. The daemon's peak memory stays within that bound plus a margin.
    @Test func aClientThatStopsReadingIsBoundedByTheQueueLimit() throws {
      let queueLimit = 4 << 20  // the documented default
      let fixture = try Fixture()
      let stalled = try fixture.daemon.connect()
      try stalled.initialize(name: "stalled")
      try stalled.result("actions/subscribe", [:])
      fixture.rebaseline()
      let peakBefore = procStatus(fixture.pid, "VmHWM") ?? 0
      // 8 MB of pipelined requests it will never read the replies of.
      var requests: [UInt8] = []
      for id in 0..<100_000 {
        requests += bytes("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"clock/now\",\"params\":{}}\n")
      }
      let pipelined = requests
      let writer = Thread { stalled.writeIgnoringErrors(pipelined) }
      writer.start()
      // Another client's actions produce ~250-byte notifications for the stalled subscriber.
      let donor = fixture.healthy
      var peak = 0
      var sent = 0
      while !fixture.daemon.log.contains("disconnecting a client that is not reading") && sent < 60_000 {
        var batch: [UInt8] = []
        for i in 0..<1_000 {
          batch += bytes(
            "{\"jsonrpc\":\"2.0\",\"id\":\(100_000 + sent + i),\"method\":\"tips/performAction\",\"params\":{\"id\":\"filter.tip\",\"actionId\":\"learn-more\",\"invalidate\":false}}\n"
          )
        }
        try donor.write(batch)
        for i in 0..<1_000 { _ = try donor.awaitReply(id: .int(Int64(100_000 + sent + i))) }
        sent += 1_000
        peak = max(peak, fixture.rss)
      }
      let hwm = procStatus(fixture.pid, "VmHWM") ?? 0
      if hwm > peakBefore { peak = max(peak, hwm) }
      print(
        "hardening.queue_limit: \(sent) notifications owed; peak RSS +\((peak - fixture.baselineRSS) / 1024) MiB over baseline"
      )
      #expect(
        fixture.daemon.waitForLog("disconnecting a client that is not reading"),
        "the stalled client was never disconnected")
      #expect(
        peak < fixture.baselineRSS + queueLimit / 1024 + rssMarginKiB,
        "peak VmRSS \(peak) KiB vs baseline \(fixture.baselineRSS) KiB")
      let (_, eof) = stalled.readUntilEOF()
      #expect(eof)
      stalled.close()
      try fixture.checkRecovered("stalled reader")
    }

    /// Requests with large replies (rpc.discover: the whole OpenRPC document) from a client that never reads:
    /// the daemon stops handling them once the client's output backs up — per message, not per read — so its
    /// memory stays within the bound; a batch whose replies alone pass the bound disconnects the client.
    @Test func largeRepliesStayWithinTheBound() throws {
      let queueLimit = 4 << 20
      let fixture = try Fixture()
      fixture.rebaseline()
      let hwmBefore = procStatus(fixture.pid, "VmHWM") ?? 0
      let greedy = try fixture.daemon.connect()
      try greedy.initialize(name: "greedy")
      var requests: [UInt8] = []
      for id in 0..<20_000 { requests += bytes("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"rpc.discover\"}\n") }
      let pipelined = requests
      let written = DispatchSemaphore(value: 0)
      let writer = Thread {
        greedy.writeIgnoringErrors(pipelined)
        written.signal()
      }
      writer.start()
      // Wait until the daemon is answering them (replies pile up unread in the client's receive queue).
      let answering = waitUntil {
        var unread: Int32 = 0
        return ioctl(greedy.readFD, UInt(FIONREAD), &unread) == 0 && unread >= 64 << 10
      }
      #expect(answering, "the daemon never answered the pipelined requests")
      #expect(try fixture.healthy.result("events/donate", ["id": "still.served"])["count"] == 1)
      let peak = max(fixture.rss, procStatus(fixture.pid, "VmHWM") ?? 0)
      print(
        "hardening.large_replies: peak RSS +\((peak - fixture.baselineRSS) / 1024) MiB over baseline (HWM before \(hwmBefore) KiB)"
      )
      #expect(
        peak < fixture.baselineRSS + queueLimit / 1024 + rssMarginKiB,
        "peak \(peak) KiB vs baseline \(fixture.baselineRSS) KiB")
      // Unblock the writer (the daemon stopped reading it) before the fd is closed and could be reused.
      shutdown(greedy.readFD, Int32(SHUT_RDWR))
      written.wait()
      greedy.close()

      let batcher = try fixture.daemon.connect()
      try batcher.initialize(name: "batcher")
      let batch =
        "["
        + Array(repeating: #"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"#, count: 5_000).joined(separator: ",")
        + "]"
      try batcher.sendRaw(batch)
      let (_, eof) = batcher.readUntilEOF()
      #expect(eof, "the batching client is disconnected")
      let logged = waitUntil() { fixture.daemon.log.contains("batch replies exceed the per-connection bound") }
      #expect(logged, "\(fixture.daemon.log)")
      let after = max(fixture.rss, procStatus(fixture.pid, "VmHWM") ?? 0)
      #expect(
        after < fixture.baselineRSS + queueLimit / 1024 + rssMarginKiB,
        "peak \(after) KiB vs baseline \(fixture.baselineRSS) KiB")
      batcher.close()
      try fixture.checkRecovered("large replies")
    }

    /// A slow reader of notifications is coalesced, not disconnected, and still sees a gap-free sequence whose last
    /// value is the current one — and fewer notifications than there were changes.
    @Test func aSlowObserverIsCoalescedWithoutGaps() throws {
      let fixture = try Fixture()
      let donor = fixture.healthy
      try donor.result("parameters/define", ["parameters": [["id": "flag", "default": false]]])
      try donor.result("tips/register", ["tips": [toggleTip]])
      let slow = try fixture.daemon.connect()
      try slow.initialize(name: "slow")
      try slow.result("tips/observe", ["ids": ["toggle.tip"]])
      var small: Int32 = 4096
      setsockopt(slow.readFD, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
      let toggles = 3_001
      var batch: [UInt8] = []
      for i in 0..<toggles {
        batch += bytes(
          "{\"jsonrpc\":\"2.0\",\"id\":\(i + 1000),\"method\":\"parameters/set\",\"params\":{\"id\":\"flag\",\"value\":\(i % 2 == 0)}}\n"
        )
      }
      try donor.write(batch)
      for i in 0..<toggles { _ = try donor.awaitReply(id: .int(Int64(i + 1000))) }
      // Every change was acknowledged to the donor, so a barrier on the slow client reads all it is owed.
      let notes = try slow.notificationsBeforeBarrier("tips/shouldDisplayChanged")
      print("hardening.coalescing: \(toggles) changes, \(notes.count) notifications delivered")
      #expect(!notes.isEmpty && notes.count < toggles, "coalescing dropped values (\(notes.count) of \(toggles))")
      for (index, note) in notes.enumerated() {
        #expect(note["params"]?["seq"]?.intValue == Int64(index + 1))
        #expect(note["params"]?["shouldDisplay"]?.boolValue == (index % 2 == 0), "never the same value twice in a row")
      }
      #expect(notes.last?["params"]?["shouldDisplay"] == true, "the last notification is the current value")
      slow.close()
      try fixture.checkRecovered("slow observer")
    }

    @Test func theConnectionLimitHolds() throws {
      let fixture = try Fixture(["--max-connections", "8"])
      var held: [RPCClient] = []
      for i in 0..<7 {
        let client = try fixture.daemon.connect()
        try client.initialize(name: "held-\(i)")
        held.append(client)
      }
      for _ in 0..<3 {
        let extra = try fixture.daemon.connect()
        let (messages, eof) = extra.readUntilEOF()
        #expect(eof)
        #expect(messages.count == 1 && errorCode(messages.first) == -32010, "\(messages)")
        extra.close()
      }
      held.removeLast().close()
      let admitted = waitUntil() {
        guard let client = try? fixture.daemon.connect(), (try? client.initialize(name: "admitted")) != nil else {
          return false
        }
        held.append(client)
        return true
      }
      #expect(admitted)
      held.forEach { $0.close() }
      try fixture.checkRecovered("connection limit")
    }

    /// 200 idle connections held open and 2,000 connect/close cycles do not starve an existing client: every request
    /// it makes while the flood goes on is answered, each once and in order.
    @Test func aConnectionFloodDoesNotStarveAnExistingClient() throws {
      // Without the per-peer limits: every one of these connections is served (Floods tests them with the limits).
      let fixture = try Fixture(["--max-connections-per-peer", "0", "--peer-connection-rate", "0"])
      var held: [RPCClient] = []
      for _ in 0..<200 { held.append(try fixture.daemon.connect()) }
      let socketPath = fixture.daemon.socketPath!
      let shared = Shared()
      // The flood and the healthy client go in lockstep: after every 50 cycles a flood worker waits until the
      // healthy client has been answered once more. So 20 answers happen during the flood by construction, and a
      // starved client would stall the flood (the hang guard would end the test).
      let hangGuard = Date().addingTimeInterval(testTimeout * 6)
      let flood = Thread {
        onThreads(2) { worker in
          for k in 0..<1_000 {
            if k % 50 == 0 {
              let needed = k / 50
              while shared["healthyRounds"] < needed {
                if Date() > hangGuard {
                  shared.add("hung")
                  return
                }
                usleep(100)
              }
            }
            guard let client = try? RPCClient(socketPath: socketPath, framing: .newline) else {
              shared.add("failed"); continue
            }
            if k % 2 == 0 {
              client.writeIgnoringErrors(
                bytes(
                  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"1.0\",\"clientInfo\":{\"name\":\"flood\"}}}\n"
                ))
            }
            if k % 3 == 0 { client.reset() } else { client.close() }
            shared.add("cycles")
          }
        }
        shared.add("done")
      }
      flood.start()
      // Each round donates one more `flood.ping`: the lifetime counts it was answered with are 1, 2, 3, … — no
      // request lost, applied twice or out of order.
      var lifetimes: [Int64] = []
      while shared["done"] == 0 {
        lifetimes.append(try fixture.healthy.result("events/donate", ["id": "flood.ping"])["lifetime"]?.intValue ?? -1)
        shared.add("healthyRounds")
      }
      print("hardening.flood: \(shared["cycles"]) cycles, \(lifetimes.count) healthy round trips")
      #expect(shared["hung"] == 0, "the healthy client was starved: \(lifetimes.count) answers during the flood")
      #expect(shared["cycles"] == 2_000)
      #expect(shared["failed"] == 0)
      #expect(lifetimes == (0..<lifetimes.count).map { Int64($0 + 1) }, "every healthy request answered, in order")
      held.forEach { $0.close() }
      try fixture.checkRecovered("connection flood")
    }
  }
}
