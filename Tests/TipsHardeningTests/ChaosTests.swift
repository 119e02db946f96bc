import Foundation
import Testing
import TipsFraming
import TipsJSON
import TipsTestSupport

/// A counter shared between test threads.
final class Shared: @unchecked Sendable {
  private let lock = NSLock()
  private var values: [String: Int] = [:]
  func add(_ key: String, _ n: Int = 1) { lock.lock(); values[key, default: 0] += n; lock.unlock() }
  func max(_ key: String, _ n: Int) { lock.lock(); values[key] = Swift.max(values[key] ?? Int.min, n); lock.unlock() }
  subscript(key: String) -> Int { lock.lock(); defer { lock.unlock() }; return values[key] ?? 0 }
  var flag: Bool {
    get { lock.lock(); defer { lock.unlock() }; return stop }
    set { lock.lock(); stop = newValue; lock.unlock() }
  }
  private var stop = false
}

/// Runs `body` on `count` threads and waits for them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
  let group = DispatchGroup()
  for k in 0..<count {
    group.enter()
    let thread = Thread {
      body(k)
      group.leave()
    }
    thread.stackSize = 1 << 20
    thread.start()
  }
  group.wait()
}

let toggleTip: JSONValue = ["id": "toggle.tip", "title": "Toggle", "rules": [["parameter": "flag", "eq": true]]]

extension Hardening {
  @Suite struct Chaos {
    /// Thousands of clients vanish mid-request, mid-response and mid-notification-burst while one client changes
    /// state and another observes; the observer sees every change, in order, and the daemon returns to its fds and
    /// memory baseline.
    @Test func abruptDisconnectsWhileAnotherClientObserves() throws {
      let fixture = try Fixture()
      let donor = fixture.healthy
      try donor.result("parameters/define", ["parameters": [["id": "flag", "default": false]]])
      try donor.result("tips/register", ["tips": [toggleTip]])
      let observer = try fixture.daemon.connect()
      try observer.initialize(name: "observer")
      let observed = try observer.result("tips/observe", ["ids": ["toggle.tip"]])
      #expect(observed["tips"]?[0]?["shouldDisplay"] == false)
      fixture.rebaseline()

      let toggles = 600
      let targetDisconnects = ProcessInfo.processInfo.environment["TIPSD_CHAOS_CLIENTS"].flatMap(Int.init) ?? 2_000
      let shared = Shared()
      let socketPath = fixture.daemon.socketPath!
      let start = Date()
      // The observer reads on its own thread so it never falls behind.
      final class Notes: @unchecked Sendable { var list: [JSONValue] = [] }
      let box = Notes()
      let observerThread = Thread {
        while box.list.count < toggles, let note = try? observer.nextNotification("tips/shouldDisplayChanged") {
          box.list.append(note)
        }
        shared.add("observer.done")
      }
      observerThread.start()
      let donorThread = Thread {
        for i in 0..<toggles {
          guard (try? donor.result("parameters/set", ["id": "flag", "value": .bool(i % 2 == 0)])) != nil else {
            shared.add("donor.failed")
            break
          }
          _ = try? donor.result("events/donate", ["id": "chaos.event", "info": ["i": .int(Int64(i))]])
          // Keep the state changing until the chaos threads have done their share.
          if i == toggles - 1 { break }
          if shared["disconnects"] < targetDisconnects * i / toggles { usleep(200) }
        }
        shared.add("donor.done")
      }
      donorThread.start()
      // Bounded by count, not by time: the workers stop once the donor is done and they have made their share of
      // disconnects, however long a busy machine takes. (The cap only guards against a hang.)
      let hangGuard = Date().addingTimeInterval(testTimeout * 30)
      onThreads(2) { worker in
        var k = worker
        while shared["donor.done"] == 0 || shared["disconnects"] < targetDisconnects {
          if Date() > hangGuard {
            shared.add("hung")
            break
          }
          k += 2
          guard let client = try? RPCClient(socketPath: socketPath, framing: k % 4 == 0 ? .contentLength : .newline)
          else {
            shared.add("connect.failed")
            continue
          }
          switch k % 3 {
          case 0:
            // Mid-request: half a frame, then RST.
            let frame = Framer.encode(
              bytes("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events/donate\",\"params\":{\"id\":\"chaos.half\"}}"),
              as: client.framing)
            client.writeIgnoringErrors(Array(frame.prefix(frame.count / 2)))
          case 1:
            // Mid-response: big replies requested, a few bytes read, then RST.
            _ = try? client.initialize(name: "chaos")
            var burst: [UInt8] = []
            for id in 0..<8 {
              burst += Framer.encode(
                bytes("{\"jsonrpc\":\"2.0\",\"id\":\(id + 10),\"method\":\"rpc.discover\"}"), as: client.framing)
            }
            client.writeIgnoringErrors(burst)
            var small = [UInt8](repeating: 0, count: 16)
            _ = read(client.readFD, &small, 16)
          default:
            // Mid-notification burst: observe everything, then vanish while changes stream in.
            _ = try? client.initialize(name: "chaos-observer")
            _ = try? client.call("tips/observe", [:])
            _ = try? client.call("actions/subscribe", [:])
            usleep(UInt32(k % 5) * 200)
          }
          client.reset()
          shared.add("disconnects")
        }
      }
      let observerDone = waitUntil(timeout: testTimeout * 3) { shared["observer.done"] > 0 }
      #expect(observerDone, "the observer thread hung")
      let notes = box.list
      let seconds = Date().timeIntervalSince(start)
      print(
        "hardening.chaos: \(shared["disconnects"]) abrupt disconnects, \(toggles) toggles, \(String(format: "%.2f", seconds)) s"
      )
      #expect(shared["donor.failed"] == 0)
      #expect(shared["hung"] == 0, "the chaos workers hung (\(shared["disconnects"]) disconnects)")
      #expect(shared["disconnects"] >= targetDisconnects)
      #expect(notes.count == toggles, "the observer saw \(notes.count) of \(toggles) notifications")
      for (index, note) in notes.enumerated() {
        #expect(note["params"]?["seq"]?.intValue == Int64(index + 1), "seq at \(index): \(note.jsonString)")
        #expect(note["params"]?["shouldDisplay"]?.boolValue == (index % 2 == 0), "value at \(index)")
      }
      try fixture.checkRecovered("abrupt disconnects")
      observer.close()
    }

    /// kill -9 under load, ten times, with a file datastore: every acknowledged donation survives, nothing that was
    /// never sent appears, and a subscriber that reconnects gets the current state.
    @Test func killNineUnderLoadLosesNoAcknowledgedWrite() throws {
      let directory = temporaryDirectory()
      defer { try? FileManager.default.removeItem(atPath: directory) }
      let datastore = "\(directory)/tips.sqlite"
      let threshold = 400
      let catalog = "\(directory)/catalog.json"
      let tip: JSONValue = [
        "id": "crash.tip", "title": "Crash",
        "rules": [["event": "crash.event", "count": ["gte": .int(Int64(threshold))]]],
      ]
      try JSONValue.object(["tips": [tip]]).jsonString.write(toFile: catalog, atomically: true, encoding: .utf8)
      var count = 0  // donations of crash.event acknowledged so far
      var upper = 0  // donations sent so far
      let rounds = 10
      for round in 0...rounds {
        let daemon = try Daemon(
          ["--catalog", catalog, "--log-level", "warning"], directory: directory, datastore: datastore)
        // Check what survived the previous kill, and what a reconnecting subscriber is told.
        let checker = try daemon.connect()
        try checker.initialize(name: "checker")
        if round == 0 { try checker.result("events/configure", ["id": "crash.event", "maxDonations": 10_000_000]) }
        let subscriber = try daemon.connect()
        try subscriber.initialize(name: "subscriber")
        let observed = try subscriber.result("tips/observe", ["ids": ["crash.tip"]])
        let stored = Int(try checker.result("events/donate", ["id": "crash.event"])["count"]?.intValue ?? -1) - 1
        #expect(
          stored >= count && stored <= upper, "round \(round): \(stored) stored, \(count) acknowledged, \(upper) sent")
        #expect(
          observed["tips"]?[0]?["shouldDisplay"]?.boolValue == (stored >= threshold),
          "round \(round): stale state for a new subscriber (stored \(stored))")
        if stored + 1 == threshold {
          #expect(try subscriber.nextNotification("tips/shouldDisplayChanged")?["params"]?["shouldDisplay"] == true)
        }
        count = stored + 1
        upper = count
        if round == rounds {
          daemon.stop(removeDirectory: false)
          break
        }
        // Load: three clients donate as fast as they are answered; kill -9 once 150–350 more donations have been
        // acknowledged (a count, not a time, so a busy machine changes how long a round takes, not what it does).
        let shared = Shared()
        let socketPath = daemon.socketPath!
        let killAt = count + Int.random(in: 150...350)
        let killer = Thread {
          _ = waitUntil(timeout: testTimeout * 3) { shared["acked"] >= killAt }
          daemon.signal(SIGKILL)
        }
        killer.start()
        onThreads(3) { _ in
          guard let client = try? RPCClient(socketPath: socketPath, framing: .newline),
            (try? client.initialize(name: "load")) != nil
          else { return }
          while true {
            shared.add("sent")
            guard let reply = try? client.call("events/donate", ["id": "crash.event"]),
              let acknowledged = reply["result"]?["count"]?.intValue
            else { break }
            shared.max("acked", Int(acknowledged))
          }
        }
        daemon.process.waitUntilExit()
        #expect(daemon.process.terminationReason == .uncaughtSignal)
        count = Swift.max(count, shared["acked"])
        upper += shared["sent"]
        daemon.stop(removeDirectory: false)
      }
      print("hardening.kill9: \(rounds) kills, \(count) donations stored")
      #expect(count >= 1_500, "the load was too light to mean anything (\(count))")
    }
  }
}
