import Testing
import TipsEngine
import TipsJSON
import TipsStore

@testable import TipsSync

@Suite struct SyncServerTests {
  @Test(arguments: [
    ("postgresql://tipsd:hunter2@db.example:5432/tips", "postgresql://tipsd:***@db.example:5432/tips"),
    (
      "postgres://tipsd:hunter2@db.example/tips?sslmode=require", "postgres://tipsd:***@db.example/tips?sslmode=require"
    ),
    (
      "postgresql://tipsd@db.example/tips?password=hunter2&sslmode=verify-full",
      "postgresql://tipsd@db.example/tips?password=***&sslmode=verify-full"
    ),
    ("postgresql:///postgres?host=/tmp/pg&port=5432", "postgresql:///postgres?host=/tmp/pg&port=5432"),
    ("host=db.example user=tipsd password=hunter2 dbname=tips", "host=db.example user=tipsd password=*** dbname=tips"),
    ("host=db.example password = 'hunter 2\\' x' dbname=tips", "host=db.example password = *** dbname=tips"),
  ])
  func passwordsAreRedacted(input: String, expected: String) throws {
    let server = try SyncServer(input)
    #expect(server.redacted == expected)
    #expect(!server.redacted.contains("hunter"))
    #expect("\(server)" == expected)
  }

  @Test func messagesAreScrubbed() throws {
    let server = try SyncServer("postgresql://tipsd:hunter2@db.example/tips")
    #expect(
      server.scrub("FATAL: password authentication failed (hunter2)") == "FATAL: password authentication failed (***)")
  }

  @Test func libpqRejectsWhatItCannotRead() {
    #expect(throws: SyncSetupError.self) { try SyncServer("postgresql://[::1") }
    #expect(throws: SyncSetupError.self) { try SyncServer("host=db nonsense") }
  }
}

@Suite struct PGSchemaTests {
  @Test func arrayLiterals() {
    #expect(PGSchema.textArray([]) == "{}")
    #expect(PGSchema.textArray(["a", "b\"c", "d\\e", "{\"k\": 1}"]) == #"{"a","b\"c","d\\e","{\"k\": 1}"}"#)
    #expect(PGSchema.textArray(["é\"ü", "🎉\\"]) == #"{"é\"ü","🎉\\"}"#)  // bytes of longer characters kept
    #expect(PGSchema.integerArray([1, -2, 30]) == "{1,-2,30}")
  }

  @Test func channelsAreIdentifiersPerAccount() {
    let channel = PGSchema.channel(account: "alice@example.com; DROP TABLE x")
    #expect(channel.hasPrefix("tipsd_") && channel.count == 22)
    #expect(channel.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
    #expect(channel != PGSchema.channel(account: "bob"))
    #expect(channel == PGSchema.channel(account: "alice@example.com; DROP TABLE x"))
    // FNV-1a (64-bit) in 16 hex digits, leading zeros kept: the names devices syncing through PostgreSQL LISTEN on.
    #expect(PGSchema.channel(account: "bob") == "tipsd_004d4419134a0a54")
    #expect(PGSchema.channel(account: "") == "tipsd_cbf29ce484222325")
    // Appended after what the bytes already hold.
    var bytes = Array("x,".utf8)
    PGSchema.appendChannel(account: "bob", to: &bytes)
    #expect(String(decoding: bytes, as: UTF8.self) == "x,tipsd_004d4419134a0a54")
  }

  /// A commit's notification payloads: cursors in decimal, as `String(_:)` writes them.
  @Test func decimalsAreWrittenAsStringWritesThem() {
    for value: Int64 in [0, 7, 9, 10, 99, 100, 12_345, 1_000_000_007, -1, -10, .max, .min] {
      var bytes = Array("a".utf8)
      PGSchema.appendDecimal(value, to: &bytes)
      #expect(String(decoding: bytes, as: UTF8.self) == "a" + String(value))
      #expect(PGSchema.decimalCount(value) == String(value).utf8.count)
    }
  }

  /// ``PGBinary/TextArrayWriter`` writes what ``PGBinary/textArray(_:)`` does, item by item.
  @Test func textArrayWriterMatchesTheArray() {
    let items = ["plain", "", "é ünï 🎉", "quote \" and \\"]
    var writer = PGBinary.TextArrayWriter()
    writer.append(items[0].utf8)
    writer.appendItem { $0.append(contentsOf: items[1].utf8) }
    writer.appendItem { $0.append(contentsOf: items[2].utf8) }
    writer.append(Array(items[3].utf8))
    #expect(writer.count == 4 && writer.bytes == PGBinary.textArray(items))
    #expect(PGBinary.TextArrayWriter().bytes == PGBinary.textArray([]))
  }
}

@Suite struct SyncOperationTests {
  @Test func payloadsRoundTrip() throws {
    let bodies: [SyncOperation.Body] = [
      .reset,
      .donation(event: "e", at: 1_700_000_000.123456, info: ["region": "north", "n": 1.5], lifetime: 1001),
      .donation(event: "e", at: 1_700_000_000, info: nil, lifetime: 1),
      .display(key: "tip\u{1F}friendly", generation: HLC(rawValue: 42), count: 3, duration: 12.25, first: 1, last: 2),
      .display(key: "tip", generation: .zero, count: 0, duration: 0, first: nil, last: nil),
      .invalidate(key: "tip", reason: .displayCountExceeded, at: 3.5),
      .resetEligibility(key: "tip"),
      .parameter(id: "level", value: 3),
      .parameter(id: "name", value: "Ünïcode \"quoted\""),
      .variant(tip: "tip", variant: "friendly"),
      .cooldown(at: 1_700_000_000.5),
      .exposure(tip: "tip", variant: "control", since: 1_700_000_001.25),
      .exposure(tip: "tip", variant: "control", since: nil),
    ]
    for body in bodies {
      let operation = SyncOperation(
        device: "d", seq: 111_398_400_000_000_000, hlc: HLC(rawValue: 111_398_400_000_000_000),
        epoch: HLC(rawValue: 7), body: body)
      let decoded = try #require(SyncOperation(device: "d", seq: operation.seq, payload: operation.payload))
      #expect(decoded == operation)
      // Written straight to bytes (#47), byte for byte what the stored payloads always were.
      #expect(operation.payload == Self.objectPayload(operation))
    }
    let donation = SyncOperation(
      device: "d", seq: 1, hlc: HLC(rawValue: 5), epoch: .zero,
      body: .donation(event: "e", at: 2, info: ["k": "v"], lifetime: 3))
    #expect(
      donation.payload == #"{"hlc":5,"epoch":0,"kind":"donation","event":"e","at":2.0,"info":{"k":"v"},"lifetime":3}"#)
    #expect(SyncOperation(device: "d", seq: 1, payload: #"{"hlc":1,"epoch":0,"kind":"fromTheFuture"}"#) == nil)
    #expect(SyncOperation(device: "d", seq: 1, payload: "not json") == nil)
  }

  /// The payload as a `JSONObject` built member by member, as `SyncOperation.payload` made it before #47.
  static func objectPayload(_ operation: SyncOperation) -> String {
    var object: JSONObject = [
      "hlc": .int(operation.hlc.rawValue), "epoch": .int(operation.epoch.rawValue), "kind": .string(operation.kind),
    ]
    switch operation.body {
    case .reset: break
    case .donation(let event, let at, let info, let lifetime):
      object["event"] = .string(event)
      object["at"] = .double(at)
      if let info { object["info"] = .object(info) }
      object["lifetime"] = .int(Int64(lifetime))
    case .display(let key, let generation, let count, let duration, let first, let last):
      object["key"] = .string(key)
      object["generation"] = .int(generation.rawValue)
      object["count"] = .int(Int64(count))
      object["duration"] = .double(duration)
      if let first { object["first"] = .double(first) }
      if let last { object["last"] = .double(last) }
    case .invalidate(let key, let reason, let at):
      object["key"] = .string(key)
      object["reason"] = .string(reason.rawValue)
      object["at"] = .double(at)
    case .resetEligibility(let key): object["key"] = .string(key)
    case .parameter(let id, let value):
      object["id"] = .string(id)
      object["value"] = value
    case .variant(let tip, let variant):
      object["tip"] = .string(tip)
      object["variant"] = .string(variant)
    case .cooldown(let at): object["at"] = .double(at)
    case .exposure(let tip, let variant, let since):
      object["tip"] = .string(tip)
      object["variant"] = .string(variant)
      object["since"] = since.map { .double($0) } ?? .null
    }
    return JSONValue.object(object).jsonString
  }
}

@Suite struct OutboxTests {
  func operation(_ seq: Int64, _ body: SyncOperation.Body) -> SyncOperation {
    SyncOperation(device: "me", seq: seq, hlc: HLC(rawValue: seq), epoch: .zero, body: body)
  }

  @Test func newerRegistersSupersedeQueuedOnes() {
    var outbox = Outbox()
    let limit: (String) -> Int = { _ in 2 }
    _ = outbox.adding(
      operation(1, .display(key: "t", generation: .zero, count: 1, duration: 1, first: 1, last: 1)), created: 0,
      donationLimit: limit)
    _ = outbox.adding(operation(2, .parameter(id: "p", value: 1)), created: 0, donationLimit: limit)
    _ = outbox.adding(operation(3, .invalidate(key: "t", reason: .tipClosed, at: 3)), created: 0, donationLimit: limit)
    let writes = outbox.adding(
      operation(4, .display(key: "t", generation: .zero, count: 2, duration: 2, first: 1, last: 4)), created: 0,
      donationLimit: limit)
    #expect(writes.contains(.outboxDelete(seq: 1)))
    #expect(outbox.first(10).map(\.operation.seq) == [2, 3, 4])
    _ = outbox.adding(operation(5, .parameter(id: "p", value: 2)), created: 0, donationLimit: limit)
    #expect(outbox.first(10).map(\.operation.seq) == [3, 4, 5])
    // A resetEligibility voids the record's queued invalidations and display counter.
    _ = outbox.adding(operation(6, .resetEligibility(key: "t")), created: 0, donationLimit: limit)
    #expect(outbox.first(10).map(\.operation.seq) == [5, 6])
    // An event keeps at most its history's bound of queued donations: the oldest goes (its count lives on).
    for seq in Int64(7)...9 {
      _ = outbox.adding(
        operation(seq, .donation(event: "e", at: Double(seq), info: nil, lifetime: Int(seq))), created: 0,
        donationLimit: limit)
    }
    #expect(outbox.first(10).map(\.operation.seq) == [5, 6, 8, 9])
    #expect(outbox.removing(8) == [.outboxDelete(seq: 8)] && outbox.removing(9) == [.outboxDelete(seq: 9)])
    // Donations tied at one instant sort by their info (none first): the newest queued one can be the oldest in
    // history order, and it stays — one over the bound — because only it carries the highest cumulative count.
    let tied: [(Int64, JSONObject?)] = [(21, ["a": 1]), (22, ["b": 1]), (23, nil)]
    for (seq, info) in tied {
      _ = outbox.adding(
        operation(seq, .donation(event: "e", at: 20, info: info, lifetime: Int(seq))), created: 0, donationLimit: limit)
    }
    #expect(outbox.first(10).map(\.operation.seq) == [5, 6, 21, 22, 23])
    // A newer donation carries the count on: the queue is back within the bound, keeping the history's newest two.
    _ = outbox.adding(
      operation(24, .donation(event: "e", at: 21, info: nil, lifetime: 24)), created: 0, donationLimit: limit)
    #expect(outbox.first(10).map(\.operation.seq) == [5, 6, 22, 24])
    // A datastore reset supersedes everything queued before it.
    _ = outbox.adding(operation(10, .reset), created: 0, donationLimit: limit)
    #expect(outbox.first(10).map(\.operation.seq) == [10])
    #expect(outbox.removing(10) == [.outboxDelete(seq: 10)])
    #expect(outbox.removing(10) == [])
    #expect(outbox.count == 0 && outbox.oldestCreated == nil)
  }

  /// A hosted account's model keeps no datastore writes (its state is PostgreSQL's); a device's keeps them. Both
  /// queue the same operation.
  @Test func aHostedModelKeepsNoWrites() throws {
    for role in [SyncModel.Role.device, .hosted] {
      let engine = Engine(clock: VirtualClock(now: 1_000))
      _ = try engine.setDonationLimit("e", 5)
      let model = try SyncModel(
        engine: engine, snapshot: SyncSnapshot(), account: "acct", device: "me", outboxLimit: 100, role: role)
      let effects = model.recordLocal(try engine.donate("e", info: nil).mutation.writes, wallNow: 1_000)
      #expect(model.outboxCount == 1)
      let seq = try #require(model.outboxBatch(.max).first?.seq)
      let pushed = model.pushed([seq])
      #expect(model.outboxCount == 0)
      if role == .hosted {
        #expect(effects.writes.isEmpty && pushed.writes.isEmpty)
      } else {
        #expect(effects.writes.contains { if case .outboxAppend(seq, _, _) = $0 { true } else { false } })
        #expect(pushed.writes == [.outboxDelete(seq: seq)])
      }
    }
  }
}

extension Outbox {
  /// ``add(_:created:donationLimit:restoring:into:)``'s writes.
  fileprivate mutating func adding(_ operation: SyncOperation, created: Double, donationLimit: (String) -> Int)
    -> [SyncWrite]
  {
    var effects = SyncEffects()
    add(operation, created: created, donationLimit: donationLimit, into: &effects)
    return effects.writes
  }

  /// ``remove(_:into:)``'s writes.
  fileprivate mutating func removing(_ seq: Int64) -> [SyncWrite] {
    var effects = SyncEffects()
    remove(seq, into: &effects)
    return effects.writes
  }
}
