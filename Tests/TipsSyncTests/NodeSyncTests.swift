import Testing
import TipsEmbedded
import TipsJSON
import TipsLogging
import TipsProtocol
import TipsRecords
import TipsTransport

@testable import TipsSync

/// Syncing through a hosted node (#37), without a node: what the transport makes of the node's messages, what a node
/// accepts from a device, and the pump driving a transport through connecting, catching up, pushing, losing the
/// connection and catching up again.
@Suite struct NodeSyncTests {
  // MARK: The node's messages

  @Test func messagesFromTheNodeDecode() {
    func decode(_ text: String) -> NodeSyncTransport.Incoming { NodeSyncTransport.decode(Array(text.utf8)) }
    #expect(decode(#"{"jsonrpc":"2.0","id":3,"result":{"cursor":9}}"#) == .result(id: 3, .object(["cursor": .int(9)])))
    #expect(
      decode(#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"sync/push: bad"}}"#)
        == .error(id: 4, code: -32602, message: "sync/push: bad"))
    // An error answering no request: the node is closing the session (its token expired).
    #expect(
      decode(#"{"jsonrpc":"2.0","id":null,"error":{"code":-32013,"message":"unauthorized: expired"}}"#)
        == .sessionEnded(code: -32013, message: "unauthorized: expired"))
    #expect(
      decode(#"{"jsonrpc":"2.0","method":"sync/changed","params":{"subscription":"sub-1","seq":1,"cursor":5}}"#)
        == .changed)
    #expect(decode(#"{"jsonrpc":"2.0","method":"tips/shouldDisplayChanged","params":{}}"#) == .ignored)
    #expect(decode("[1,2]") == .unreadable("not a JSON object"))
    #expect(decode("{not json") == .unreadable("not a JSON object"))
  }

  @Test func aPullAnswersRowsOrASnapshot() throws {
    let rows = try JSONParser.parse(
      #"{"operations":[{"cursor":7,"device":"node-a","seq":2,"op":{"hlc":1,"epoch":0,"kind":"reset"}}],"#
        + #""snapshot":null,"cursor":7,"more":false,"subscription":"sub-1"}"#)
    guard case .success(.rows(let pulled)) = NodeSyncTransport.pulled(rows) else {
      Issue.record("not rows")
      return
    }
    #expect(pulled.count == 1 && pulled[0].cursor == 7 && pulled[0].device == "node-a" && pulled[0].seq == 2)
    #expect(SyncOperation(device: "node-a", seq: 2, payload: pulled[0].payload)?.body == .reset)
    let snapshot = try JSONParser.parse(
      #"{"operations":[],"snapshot":{"version":1,"cursor":40},"cursor":40,"more":true,"subscription":"sub-1"}"#)
    guard case .success(.snapshot(let state, let cursor)) = NodeSyncTransport.pulled(snapshot) else {
      Issue.record("not a snapshot")
      return
    }
    let parsed = try JSONParser.parse(state)
    #expect(cursor == 40 && parsed["cursor"] == .int(40))
    guard case .failure(let error) = NodeSyncTransport.pulled(.object(["cursor": .int(1)])) else {
      Issue.record("an unreadable answer was taken")
      return
    }
    #expect(error.message.contains("sync/pull"))
  }

  // MARK: What a node accepts from a device

  static let now = 1_800_000_000.0
  static let hlc = Int64(now * 1000) << 16

  func untrusted(_ op: JSONObject) -> Result<SyncOperation, UntrustedOperationError> {
    SyncOperation.untrusted(device: "device:phone", seq: 3, op: op, now: Self.now)
  }

  @Test func aDevicesOperationIsDecodedAndBounded() throws {
    let donation: JSONObject = [
      "hlc": .int(Self.hlc), "epoch": .int(0), "kind": .string("donation"), "event": .string("search.opened"),
      "at": .double(Self.now), "lifetime": .int(4), "unknown": .string("dropped"),
    ]
    let operation = try untrusted(donation).get()
    #expect(operation.device == "device:phone" && operation.seq == 3)
    // What is stored is the canonical payload: nothing the device added beyond the operation.
    #expect(!operation.payload.contains("unknown"))
    func refused(_ op: JSONObject, _ problem: String) {
      guard case .failure(let error) = untrusted(op) else {
        Issue.record("accepted: \(op)")
        return
      }
      #expect(error.problem.contains(problem), "\(error.problem)")
    }
    var farAhead = donation
    farAhead["hlc"] = .int(Int64.max)
    refused(farAhead, "ahead of the node's clock")
    var negative = donation
    negative["hlc"] = .int(-1)
    refused(negative, "at least 0")
    var afterHLC = donation
    afterHLC["epoch"] = .int(Self.hlc + 1)
    refused(afterHLC, "epoch must not be after hlc")
    var overflowing = donation
    overflowing["lifetime"] = .int(Int64.max)
    refused(overflowing, "lifetime must be from 1")
    var nodes = donation
    nodes["kind"] = .string("variant")
    refused(nodes, "a hosted node's own")
    var unknown = donation
    unknown["kind"] = .string("drop")
    refused(unknown, "is not an operation")
    var missing = donation
    missing["event"] = nil
    refused(missing, "missing or of the wrong type")
    let display: JSONObject = [
      "hlc": .int(Self.hlc), "epoch": .int(0), "kind": .string("display"), "key": .string("filter.tip"),
      "generation": .int(0), "count": .int(Int64.max), "duration": .double(1),
    ]
    refused(display, "count must be from 0")
    var negativeDuration = display
    negativeDuration["count"] = .int(1)
    negativeDuration["duration"] = .double(-5)
    refused(negativeDuration, "duration")
  }

  @Test func pushesAreBoundedAndDeviceIDsCannotBeANodes() throws {
    func decode(_ params: JSONObject) throws(ResponseError) -> SyncPushRequest {
      try Messages.decode(SyncPushRequest.self, params: .object(params))
    }
    let op: JSONValue = .object(["hlc": .int(1), "epoch": .int(0), "kind": .string("reset")])
    let ok = try decode(["device": .string("device:phone"), "ops": .array([.object(["seq": .int(1), "op": op])])])
    #expect(ok.ops.count == 1 && ok.ops[0].seq == 1)
    let refusals: [(JSONObject, String)] = [
      (["device": .string("node-a"), "ops": .array([])], "must begin with \"device:\""),
      (["device": .string("device:"), "ops": .array([])], "must begin with"),
      (["device": .string("device:a b"), "ops": .array([])], "printable ASCII"),
      (["device": .string("device:phone"), "ops": .array([.int(1)])], "params.ops[0] must be an object"),
      (
        ["device": .string("device:phone"), "ops": .array([.object(["seq": .int(0), "op": op])])],
        "params.ops[0].seq must be a sequence number"
      ),
      (
        [
          "device": .string("device:phone"),
          "ops": .array([.object(["seq": .int(2), "op": op]), .object(["seq": .int(2), "op": op])]),
        ], "params.ops[1].seq must be greater"
      ),
      (
        ["device": .string("device:phone"), "ops": .array([.object(["seq": .int(1), "op": op, "x": .int(1)])])],
        "unknown member"
      ),
      (
        [
          "device": .string("device:phone"),
          "ops": .array((1...501).map { .object(["seq": .int(Int64($0)), "op": op]) }),
        ], "at most 500 operations"
      ),
      (
        [
          "device": .string("device:phone"),
          "ops": .array([
            .object([
              "seq": .int(1),
              "op": .object(["hlc": .int(1), "blob": .string(String(repeating: "x", count: 20_000))]),
            ])
          ]),
        ], "at most 16384 bytes"
      ),
    ]
    for (params, message) in refusals {
      #expect {
        try decode(params)
      } throws: { error in
        (error as? ResponseError)?.code == .invalidParams && "\(error)".contains(message)
      }
    }
  }

  @Test func aLargeBatchIsPushedInPiecesTheNodeReads() {
    let small = SyncPushRequest.Operation(seq: 1, op: ["kind": "reset"])
    #expect(NodeSyncTransport.chunks([], payloads: []).isEmpty)
    #expect(NodeSyncTransport.chunks([small, small], payloads: ["{}", "{}"]).map(\.count) == [2])
    // By bytes: 100 operations of 10 KB each in pushes under the bound.
    let big = String(repeating: "x", count: 10_000)
    let sizes = NodeSyncTransport.chunks(
      Array(repeating: small, count: 100), payloads: Array(repeating: big, count: 100)
    )
    .map(\.count)
    #expect(sizes.reduce(0, +) == 100 && sizes.allSatisfy { $0 * 10_032 <= NodeSyncTransport.maxPushBytes })
    // By count: never more than a push takes.
    let counts = NodeSyncTransport.chunks(
      Array(repeating: small, count: 1_200), payloads: Array(repeating: "{}", count: 1_200)
    )
    .map(\.count)
    #expect(counts == [500, 500, 200])
  }

  // MARK: The token

  /// Runs `read(on:)` on a real libuv loop (the command's output is polled there) and returns what it read.
  func readOnLoop(_ source: SyncTokenSource, timeout: Double = 30) throws -> Result<String, SyncTransportError> {
    let loop = try UVLoop()
    var result: Result<String, SyncTransportError>?
    source.read(on: loop, timeout: timeout) { read in
      result = read
      loop.stop()
    }
    loop.run()
    return try #require(result)
  }

  @Test func theTokenCommandIsReadWithoutBlockingTheLoop() throws {
    #expect(try readOnLoop(.command("printf '  eyJ.eyJ.sig \\n'")).get() == "eyJ.eyJ.sig")
    guard case .failure(let failed) = try readOnLoop(.command("echo eyJ; exit 3")) else {
      Issue.record("a failing command's output was taken")
      return
    }
    #expect(failed.message.contains("exited with status 3"))
    guard case .failure(let slow) = try readOnLoop(.command("sleep 5; echo late"), timeout: 0.2) else {
      Issue.record("a command past its time was waited for")
      return
    }
    #expect(slow.message.contains("did not finish within"))
    guard case .failure(let empty) = try readOnLoop(.command("true")) else {
      Issue.record("an empty output was taken")
      return
    }
    #expect(empty.message.contains("no token"))
    guard case .failure(let missing) = try readOnLoop(.file("/nonexistent/tipsd.token")) else {
      Issue.record("a missing file was read")
      return
    }
    #expect(missing.message.contains("cannot be read"))
  }

  // MARK: The pump over a transport

  final class FakeTransport: SyncTransport {
    var redacted: String { "ws://127.0.0.1:1/" }
    var peerName: String { "the hosted node" }
    var events: SyncTransportEvents?
    var opened = 0
    var closed = 0
    var handshakes: [(Result<(version: Int, supported: Int), SyncTransportError>) -> Void] = []
    var listens: [(Result<Void, SyncTransportError>) -> Void] = []
    var pulls: [(after: Int64, done: (Result<PulledOperations, SyncTransportError>) -> Void)] = []
    var pushes: [(batch: [Int64], done: (Result<Void, SyncTransportError>) -> Void)] = []

    func open(_ events: SyncTransportEvents) {
      opened += 1
      self.events = events
    }
    func close() { closed += 1 }
    func handshake(_ done: @escaping (Result<(version: Int, supported: Int), SyncTransportError>) -> Void) {
      handshakes.append(done)
    }
    func listen(_ done: @escaping (Result<Void, SyncTransportError>) -> Void) { listens.append(done) }
    func pull(after cursor: Int64, limit: Int, _ done: @escaping (Result<PulledOperations, SyncTransportError>) -> Void)
    {
      pulls.append((cursor, done))
    }
    func push(_ batch: [PendingOperation], _ done: @escaping (Result<Void, SyncTransportError>) -> Void) {
      pushes.append((batch.map(\.seq), done))
    }
  }

  final class FakeDevice: SyncPumpDelegate {
    var outbox: [Int64] = []
    var cursor: Int64 = 0
    var received: [[Int64]] = []
    var snapshots: [Int64] = []
    var committedSeqs: [Int64] = []

    func outboxBatch(_ limit: Int) -> [PendingOperation] {
      outbox.prefix(limit).map { PendingOperation(seq: $0, payload: "{}") }
    }
    func received(_ rows: [OperationRow]) {
      received.append(rows.map(\.cursor))
      cursor = rows.last?.cursor ?? cursor
    }
    func receivedSnapshot(_ state: String, cursor: Int64) -> Bool {
      snapshots.append(cursor)
      self.cursor = cursor
      return true
    }
    func committed(_ seqs: [Int64]) {
      committedSeqs += seqs
      outbox.removeAll { seqs.contains($0) }
    }
  }

  func row(_ cursor: Int64) -> OperationRow {
    OperationRow(cursor: cursor, device: "node-a", seq: cursor, payload: "{}")
  }

  @Test func thePumpCatchesUpPushesAndCatchesUpAgainAfterEveryReconnect() {
    let loop = EmbeddedEventLoop()
    let transport = FakeTransport()
    let device = FakeDevice()
    var configuration = SyncPump.Configuration(account: "alice", device: "device:phone")
    configuration.pullBatch = 10
    let pump = SyncPump(
      loop: loop, configuration: configuration, transport: transport, delegate: device, wallClock: { 0 },
      logger: .discarding)
    device.outbox = [1, 2]
    pump.start()
    #expect(transport.opened == 1 && pump.state == .connecting)
    transport.events?.ready()
    transport.handshakes.removeFirst()(.success((0, 0)))
    transport.listens.removeFirst()(.success(()))
    #expect(pump.state == .connected)
    // Catch-up first, from the device's cursor; then the outbox.
    #expect(transport.pulls.count == 1 && transport.pulls[0].after == 0 && transport.pushes.isEmpty)
    transport.pulls.removeFirst().done(.success(.rows([row(1), row(2)])))
    #expect(device.received == [[1, 2]] && device.cursor == 2)
    #expect(transport.pushes.count == 1 && transport.pushes[0].batch == [1, 2])
    // One step at a time: the node's notification while the push runs is remembered.
    transport.events?.changed()
    #expect(transport.pulls.isEmpty)
    transport.pushes.removeFirst().done(.success(()))
    #expect(device.committedSeqs == [1, 2] && pump.pushedCount == 2)
    #expect(transport.pulls.count == 1 && transport.pulls[0].after == 2)
    // Behind the operations kept: the snapshot, then on from its cursor.
    transport.pulls.removeFirst().done(.success(.snapshot(state: "{}", cursor: 50)))
    #expect(device.snapshots == [50] && transport.pulls.count == 1 && transport.pulls[0].after == 50)
    transport.pulls.removeFirst().done(.success(.rows([])))

    // Offline: a change queues; the link is lost; the pump backs off and connects again (reading the token anew is
    // the transport's open), then catches up before pushing what queued.
    device.outbox = [3]
    pump.kick()
    #expect(transport.pushes.count == 1)
    transport.events?.failed("the server closed the connection")
    #expect(pump.state == .disconnected && pump.lastError == "the server closed the connection")
    // The push's answer for the lost connection is ignored.
    transport.pushes.removeFirst().done(.success(()))
    #expect(device.committedSeqs == [1, 2])
    loop.advance(by: 100)
    #expect(transport.opened == 2)
    transport.events?.ready()
    transport.handshakes.removeFirst()(.success((0, 0)))
    transport.listens.removeFirst()(.success(()))
    #expect(transport.pulls.count == 1 && transport.pulls[0].after == 50 && transport.pushes.isEmpty)
    transport.pulls.removeFirst().done(.success(.rows([row(51)])))
    #expect(transport.pushes.count == 1 && transport.pushes[0].batch == [3])
    // A refused push (a token that expired meanwhile) gives the connection up like a lost one.
    transport.pushes.removeFirst().done(.failure(SyncTransportError("the node refused (-32013): expired")))
    #expect(pump.state == .disconnected && pump.lastError?.contains("-32013") == true)
    loop.advance(by: 200)
    #expect(transport.opened == 3)
    pump.stop()
    #expect(pump.state == .stopped)
  }
}
