import Testing
import TipsEngine
import TipsFraming
import TipsJSON
import TipsProtocol
import TipsSync
import TipsTestSupport

@testable import TipsServer

/// The server's timing-sensitive behaviour, in process on the embedded loop: manual time, in-memory streams, no
/// sleeps. After `loop.run()` everything that can happen now has happened, so absence is checked by looking.
@Suite struct InProcessServerTests {
  // MARK: Time

  static let recentSearchTip: JSONValue = [
    "id": "recent", "title": "Recent",
    "rules": [["event": "search.opened", "within": ["minutes": 10], "count": ["gte": 1]]],
  ]

  /// On the system clock a timer is armed for the engine's next change: the window closes at exactly 600 s, with no
  /// donation and no request.
  @Test func aWindowClosingWakesTheServerAtItsInstant() throws {
    let fixture = try TestServer()
    let watcher = try fixture.connect()
    let driver = try fixture.connect()
    try driver.result("tips/register", ["tips": [Self.recentSearchTip]])
    try watcher.result("tips/observe", ["ids": ["recent"]])
    try driver.result("events/donate", ["id": "search.opened"])
    try watcher.read()
    #expect(watcher.takeShouldDisplay().map(\.value) == [true])
    fixture.loop.advance(seconds: 599.9)
    try watcher.read()
    #expect(watcher.inbox.isEmpty, "the window is still open at 599.9 s")
    fixture.loop.advance(seconds: 0.2)
    try watcher.read()
    let expired = watcher.takeShouldDisplay()
    #expect(expired.map(\.value) == [false])
    #expect(expired.map(\.seq) == [2])
  }

  /// A later donation moves the next change further: the timer is re-armed, not fired early.
  @Test func aNewDonationRearmsTheTimer() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    try client.result("tips/register", ["tips": [Self.recentSearchTip]])
    try client.result("tips/observe", ["ids": ["recent"]])
    try client.result("events/donate", ["id": "search.opened"])
    #expect(client.takeShouldDisplay().map(\.value) == [true])
    fixture.loop.advance(seconds: 300)
    try client.result("events/donate", ["id": "search.opened"])
    fixture.loop.advance(seconds: 300.5)
    try client.read()
    #expect(client.takeShouldDisplay().isEmpty, "the second donation keeps the window open")
    fixture.loop.advance(seconds: 300)
    try client.read()
    #expect(client.takeShouldDisplay().map(\.value) == [false])
    #expect(try client.result("tips/status", ["ids": ["recent"]])["tips"]?[0]?["shouldDisplay"] == false)
  }

  @Test func theDailyCooldownEndsOnItsOwn() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    try client.result("tips/configure", ["displayFrequency": "daily"])
    try client.result("tips/register", ["tips": [["id": "first", "title": "F"], ["id": "second", "title": "S"]]])
    try client.result("tips/observe", ["ids": ["second"]])
    try client.result("tips/displayed", ["id": "first"])
    #expect(client.takeShouldDisplay().map(\.value) == [false], "the cooldown holds back the tip not yet shown")
    fixture.loop.advance(seconds: 86_399)
    try client.read()
    #expect(client.takeShouldDisplay().isEmpty)
    fixture.loop.advance(seconds: 2)
    try client.read()
    #expect(client.takeShouldDisplay().map(\.value) == [true])
  }

  // MARK: Back-pressure and coalescing

  /// A slow observer (a 2 KB receive buffer, a 4 KB high-water mark) is coalesced, not disconnected: it receives a
  /// gap-free sequence, never the same value twice, ending at the current value — and fewer notifications than
  /// there were changes.
  @Test func aSlowObserverIsCoalescedWithoutGaps() throws {
    let fixture = try TestServer { $0.outgoingHighWater = 4 << 10 }
    let donor = try fixture.connect()
    try donor.registerToggle()
    let slow = try fixture.connect()
    try slow.result("tips/observe", ["ids": ["toggle.tip"]])
    slow.stream.window = 2 << 10
    let changes = 1_001
    for i in 0..<changes { try donor.result("parameters/set", ["id": "flag", "value": .bool(i % 2 == 0)]) }
    var notes: [(seq: Int64, value: Bool)] = []
    while true {
      try slow.flush()
      let more = slow.takeShouldDisplay()
      if more.isEmpty && slow.stream.pendingWriteBytes == 0 && slow.stream.unread == 0 { break }
      notes += more
    }
    #expect(notes.map(\.seq) == Array(1...Int64(notes.count)))
    for (index, note) in notes.enumerated() { #expect(note.value == (index % 2 == 0)) }
    #expect(notes.last?.value == true, "the last notification is the current value")
    #expect(notes.count < changes, "coalescing dropped intermediate values (\(notes.count) of \(changes))")
    #expect(!fixture.logged("disconnecting"))
  }

  /// A client that stops reading its replies stops being read (input back-pressure) instead of piling up replies;
  /// once it reads again every request is answered.
  @Test func aClientThatStopsReadingStopsBeingRead() throws {
    let fixture = try TestServer { $0.outgoingHighWater = 64 << 10 }
    let greedy = try fixture.connect(window: 16 << 10)
    let count = 200
    var pipelined: [UInt8] = []
    for id in 0..<count { pipelined += Array("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"rpc.discover\"}\n".utf8) }
    greedy.write(pipelined)
    fixture.loop.run()
    #expect(!greedy.stream.isReading, "the server stopped reading the client")
    let session = try #require(fixture.server.sessions[greedy.stream.id])
    #expect(session.outbound.queuedBytes + session.outbound.stagedBytes < 256 << 10, "nothing piles up")
    // Another client is served meanwhile.
    let other = try fixture.connect()
    #expect(try other.result("events/donate", ["id": "still.served"])["count"] == 1)
    var answered = 0
    while answered < count {
      try greedy.flush()
      let replies = greedy.takeAll().filter { $0["id"] != nil }
      answered += replies.count
      if replies.isEmpty && greedy.stream.pendingWriteBytes == 0 && greedy.stream.unread == 0 && answered < count {
        Issue.record("stalled after \(answered) replies")
        break
      }
    }
    #expect(answered == count)
    #expect(greedy.stream.isReading)
  }

  /// A pipelined client's replies of one turn are handed to its stream in one write, in order and framed as the
  /// client frames its requests.
  @Test(arguments: [Framing.newline, .contentLength])
  func oneTurnsRepliesLeaveInOneWrite(framing: Framing) throws {
    let fixture = try TestServer()
    let client = try fixture.connect(framing: framing)
    let writesBefore = client.stream.writeCount
    var burst: [UInt8] = []
    for id in 0..<50 {
      let request = #"{"jsonrpc":"2.0","id":\#(id),"method":"events/donate","params":{"id":"burst"}}"#
      burst += Framer.encode(Array(request.utf8), as: framing)
    }
    client.write(burst)
    try client.flush()
    #expect(client.stream.writeCount == writesBefore + 1)
    let replies = client.takeAll()
    #expect(replies.map { $0["id"] } == (0..<50).map { JSONValue.int(Int64($0)) })
    #expect(replies.map { $0["result"]?["count"] } == (1...50).map { JSONValue.int(Int64($0)) })
  }

  /// Output gathered for one write still respects the high water: no more than the high water and one message is
  /// handed to a client that does not read, the rest waits, and every reply arrives in order once it reads.
  @Test func gatheredOutputRespectsTheHighWater() throws {
    let fixture = try TestServer { $0.outgoingHighWater = 8 << 10 }
    // The window is set after initialize: its reply alone (every method the daemon answers) is over 1 KiB.
    let client = try fixture.connect()
    client.stream.window = 1 << 10
    var burst: [UInt8] = []
    for id in 0..<400 {
      burst += Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"events/donate","params":{"id":"hw"}}"#.utf8) + [10]
    }
    client.write(burst)
    fixture.loop.run()
    #expect(client.stream.pendingWriteBytes > 0)
    #expect(client.stream.pendingWriteBytes < (8 << 10) + 256)
    var ids: [JSONValue] = []
    var rounds = 0
    while ids.count < 400 && rounds < 10_000 {
      try client.flush()
      ids += client.takeAll().compactMap { $0["id"] }
      rounds += 1
    }
    #expect(ids == (0..<400).map { JSONValue.int(Int64($0)) })
  }

  /// A subscriber that never reads is disconnected once its queue passes --queue-limit; the others keep going.
  @Test func aSubscriberThatNeverReadsIsDisconnectedAtTheQueueLimit() throws {
    let fixture = try TestServer {
      $0.outgoingHighWater = 1 << 10
      $0.outgoingQueueLimit = 16 << 10
    }
    let actor = try fixture.connect()
    try actor.result("tips/register", ["tips": [filterTip]])
    let stalled = try fixture.connect()
    try stalled.result("actions/subscribe", [:])
    stalled.stream.window = 0  // it stops reading
    var performed = 0
    while !stalled.stream.hasClosed && performed < 1_000 {
      try actor.result("tips/performAction", ["id": "filter.tip", "actionId": "learn-more", "invalidate": false])
      performed += 1
    }
    #expect(stalled.stream.hasClosed)
    #expect(fixture.logged("disconnecting a client that is not reading", level: .warning), "\(fixture.logText)")
    #expect(performed < 1_000)
    #expect(fixture.server.connectionCount == 1)
    #expect(fixture.server.local!.subscriptions.count == 0, "its subscription went with it")
    #expect(try actor.result("events/donate", ["id": "after"])["count"] == 1)
  }

  /// A batch whose replies alone pass the per-connection bound disconnects the client; a smaller one is answered.
  @Test func batchRepliesAreBounded() throws {
    let fixture = try TestServer { $0.outgoingQueueLimit = 256 << 10 }
    let small = try fixture.connect()
    small.sendRaw(
      "[" + (1...100).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"clock/now"}"# }.joined(separator: ",") + "]")
    try small.flush()
    #expect(small.inbox.first?.arrayValue?.count == 100)
    let big = try fixture.connect()
    big.sendRaw(
      "[" + (1...100).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"rpc.discover"}"# }.joined(separator: ",") + "]")
    try big.flush()
    #expect(big.stream.hasClosed)
    #expect(big.inbox.isEmpty)
    #expect(fixture.logged("batch replies exceed the per-connection bound"))
  }

  // MARK: Vanishing clients

  /// A subscriber vanishes with notifications owed: the others see every change in order, and its session and
  /// subscriptions are gone.
  @Test func aSubscriberVanishingMidNotificationHurtsNobody() throws {
    let fixture = try TestServer { $0.outgoingHighWater = 1 << 10 }
    let donor = try fixture.connect()
    try donor.registerToggle()
    let healthy = try fixture.connect()
    try healthy.result("tips/observe", ["ids": ["toggle.tip"]])
    let doomed = try fixture.connect()
    try doomed.result("tips/observe", [:])
    try doomed.result("actions/subscribe", [:])
    doomed.stream.window = 512
    for i in 0..<20 { try donor.result("parameters/set", ["id": "flag", "value": .bool(i % 2 == 0)]) }
    #expect(doomed.stream.pendingWriteBytes > 0, "the doomed client is owed notifications")
    doomed.stream.peerReset()
    for i in 20..<40 { try donor.result("parameters/set", ["id": "flag", "value": .bool(i % 2 == 0)]) }
    try healthy.flush()
    let seen = healthy.takeShouldDisplay()
    #expect(seen.map(\.seq) == Array(1...40))
    #expect(seen.map(\.value) == (0..<40).map { $0 % 2 == 0 })
    #expect(doomed.stream.hasClosed)
    #expect(fixture.server.connectionCount == 2)
    #expect(fixture.server.local!.subscriptions.count == 1)
    #expect(!fixture.log.records.contains { $0.level >= .warning }, "\(fixture.logText)")
  }

  /// End of input: the replies to the last requests still go out, then the connection closes.
  @Test func endOfInputFlushesTheLastReplies() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    let id = client.sendRequest("events/donate", ["id": "last"])
    client.stream.peerClose()
    try client.flush()
    #expect(try client.takeReply(id: id)["result"]?["count"] == 1)
    #expect(client.stream.hasClosed)
  }

  // MARK: Incomplete messages

  /// A message left incomplete is answered -32600 and closed after --partial-timeout, not before.
  @Test func anIncompleteMessageTimesOut() throws {
    let fixture = try TestServer { $0.partialMessageTimeout = 5 }
    let client = try fixture.connect()
    client.write(Array(#"{"jsonrpc":"2.0","id":2,"#.utf8))
    fixture.loop.advance(seconds: 4)
    try client.read()
    #expect(client.inbox.isEmpty && !client.stream.hasClosed, "still waiting at 4 s")
    fixture.loop.advance(seconds: 2.5)
    try client.read()
    #expect(client.inbox.count == 1)
    #expect(client.inbox.first?["error"]?["code"] == -32600)
    #expect(client.inbox.first?["id"] == .null)
    #expect(client.stream.hasClosed)
    #expect(fixture.logged("stayed incomplete"))
  }

  /// Completing the message in time keeps the connection.
  @Test func aMessageCompletedInTimeIsAnswered() throws {
    let fixture = try TestServer { $0.partialMessageTimeout = 5 }
    let client = try fixture.connect()
    client.write(Array(#"{"jsonrpc":"2.0","id":2,"#.utf8))
    fixture.loop.advance(seconds: 4)
    client.write(Array(#""method":"clock/now"}"#.utf8) + [0x0A])
    fixture.loop.advance(seconds: 10)
    try client.read()
    #expect(client.inbox.first?["result"]?["virtual"] == false)
    #expect(!client.stream.hasClosed)
  }

  // MARK: Durability

  /// A commit that fails (the datastore is full) is never acknowledged: each durable request of the turn gets
  /// -32005, a request that staged nothing in the same batch still gets its result, and the daemon keeps serving.
  @Test func aFailedCommitIsNeverAcknowledged() throws {
    let fixture = try TestServer { $0.datastoreMaxPages = 40 }
    let client = try fixture.connect()
    let padding = String(repeating: "x", count: 2_000)
    var acknowledged = 0
    var failure: JSONValue?
    for n in 0..<2_000 {
      let reply = try client.call("events/donate", ["id": .string("e\(n % 20)"), "info": ["pad": .string(padding)]])
      if let error = reply["error"] {
        failure = error
        break
      }
      acknowledged += 1
    }
    let error = try #require(failure, "the datastore never filled up after \(acknowledged) donations")
    #expect(acknowledged > 5)
    #expect(error["code"] == -32005)
    #expect(error["message"]?.stringValue?.contains("not committed") == true)
    #expect(fixture.logged("datastore commit failed", level: .error))
    let batch =
      "[" + #"{"jsonrpc":"2.0","id":"w","method":"events/donate","params":{"id":"full","info":{"pad":"\#(padding)"}}},"#
      + #"{"jsonrpc":"2.0","id":"r","method":"clock/now"}]"#
    client.sendRaw(batch)
    try client.flush()
    let replies = try #require(client.inbox.first?.arrayValue)
    #expect(replies.first { $0["id"] == "w" }?["error"]?["code"] == -32005)
    #expect(replies.first { $0["id"] == "r" }?["result"]?["now"] != nil)
  }

  /// With --sync, a failed commit leaves the sync model as the datastore holds it: the outbox (what will be pushed to
  /// the account's other devices) and this device's contributions. Before, the in-memory outbox kept the lost turn's
  /// operations, and the next successful commit pushed changes the engine had undone.
  @Test func aFailedCommitLeavesTheSyncModelAsStored() throws {
    let fixture = try TestServer {
      $0.datastoreMaxPages = 60
      // Nothing listens there: the pump only retries; what matters is what it would push.
      $0.sync = SyncConfiguration(server: "postgresql://127.0.0.1:1/none", account: "acct", device: "phone")
    }
    let client = try fixture.connect()
    let padding = String(repeating: "x", count: 2_000)
    var failed = false
    for n in 0..<2_000 {
      let reply = try client.call("events/donate", ["id": .string("e\(n % 20)"), "info": ["pad": .string(padding)]])
      if reply["error"] != nil {
        failed = true
        break
      }
    }
    #expect(failed, "the datastore never filled up")
    let sync = try #require(fixture.server.local?.sync)
    let stored = try SyncModel(
      engine: fixture.server.engine, snapshot: try fixture.server.store.loadSync(), account: "acct", device: "phone",
      outboxLimit: .max)
    #expect(sync.model.outboxBatch(.max).map(\.seq) == stored.outboxBatch(.max).map(\.seq))
    #expect(sync.model.stateRows() == stored.stateRows())
  }

  // MARK: Lifecycle

  @Test func exitOverASocketClosesOnlyThatConnection() throws {
    let fixture = try TestServer()
    let leaving = try fixture.connect()
    let staying = try fixture.connect()
    leaving.notify("exit")
    try leaving.flush()
    #expect(leaving.stream.hasClosed)
    #expect(!fixture.loop.isStopped)
    #expect(try staying.result("clock/now")["virtual"] == false)
  }

  @Test func exitOnThePrimaryConnectionStopsTheServer() throws {
    let fixture = try TestServer()
    let primary = try fixture.connect(primary: true)
    try primary.result("shutdown")
    primary.notify("exit")
    try primary.flush()
    #expect(fixture.server.exitStatus == .clean)
    fixture.loop.advance(seconds: 3)
    #expect(fixture.loop.isStopped)
  }

  @Test func exitWithoutShutdownReportsIt() throws {
    let fixture = try TestServer()
    let primary = try fixture.connect(primary: true)
    primary.notify("exit")
    try primary.flush()
    #expect(fixture.server.exitStatus == .exitWithoutShutdown)
  }

  // MARK: Sync

  /// Without --sync, `sync/status` says so (and `tipsd sync status` exits 1 saying how to turn it on).
  @Test func syncStatusWithoutSync() throws {
    let fixture = try TestServer()
    let client = try fixture.connect()
    #expect(try client.send(SyncStatusRequest()) == .disabled)
  }
}
