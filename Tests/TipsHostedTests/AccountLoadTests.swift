import Foundation
import Testing
import TipsEngine
import TipsJSON
import TipsRecords
import TipsSync

@testable import TipsHosted

/// The catalog of these tests: counts, windows, filters, parameters, both display budgets, variants, a display
/// frequency (so the cooldown matters) and a `"sync": "local"` tip.
enum HostedFixture {
  static let catalog: JSONValue = [
    "parameters": [["id": "loggedIn", "default": false], ["id": "level", "default": 0]],
    "tips": [
      ["id": "count.tip", "title": "Count", "rules": [["event": "e1", "count": ["gte": 3]]]],
      [
        "id": "window.tip", "title": "Window", "rules": [["event": "e2", "within": ["hours": 1], "count": ["gte": 1]]],
        "options": ["maxDisplayCount": 4],
      ],
      [
        "id": "param.tip", "title": "Param",
        "rules": [["parameter": "loggedIn", "eq": true], ["parameter": "level", "gte": 2]],
        "options": ["maxDisplayDuration": 60],
      ],
      [
        "id": "variant.tip", "title": "Variant", "rules": [["event": "e1", "count": ["gte": 1]]],
        "options": ["maxDisplayCount": 3],
        "variants": ["friendly": ["title": "Friendly"], "terse": ["title": "Terse"], "plain": ["title": "Plain"]],
      ],
      ["id": "local.tip", "title": "Local", "sync": "local"],
    ],
  ]
  static let tips = ["count.tip", "window.tip", "param.tip", "variant.tip", "local.tip"]
  static let events = ["e1", "e2", "e3"]

  /// A fresh engine for `account` with the catalog registered, as a node makes one before loading the account.
  static func engine(account: String, clock: any EngineClock) throws -> Engine {
    let engine = Engine(clock: clock, configuration: EngineConfiguration(canonicalDonationOrder: true))
    _ = try engine.setInstallID(account)
    _ = engine.configure(displayFrequency: .hourly)
    let parameters = (catalog["parameters"]?.arrayValue ?? []).map {
      ParameterDefinition(id: $0["id"]?.stringValue ?? "", defaultValue: $0["default"] ?? .null)
    }
    _ = try engine.defineParameters(parameters)
    let tips = try (catalog["tips"]?.arrayValue ?? []).enumerated().map { index, json in
      try TipDefinition(json: json, path: "tips[\(index)]")
    }
    _ = try engine.register(tips)
    _ = try engine.setDonationLimit("e1", 6)
    return engine
  }

  static func isSynced(_ engine: Engine) -> (String) -> Bool {
    { [unowned engine] key in engine.definition(of: Engine.tipID(ofRecordKey: key))?.sync != .local }
  }
}

/// PostgreSQL's `tipsd.ops`, simulated: cursors in insertion order, one copy per (device, seq).
private final class SimulatedLog {
  var rows: [OperationRow] = []
  var keys: Set<String> = []

  /// Appends what is new of a batch; returns the account's last cursor (what `tipsd.push` returns).
  func push(device: String, _ batch: [PendingOperation]) -> Int64 {
    for operation in batch where keys.insert("\(device)/\(operation.seq)").inserted {
      let (seq, payload) = (operation.seq, operation.payload)
      rows.append(OperationRow(cursor: Int64(rows.count + 1), device: device, seq: seq, payload: payload))
    }
    return Int64(rows.count)
  }
}

/// A node serving the account: a fresh engine loaded from the log, local changes pushed, others' pulled.
private final class SimulatedNode {
  let name: String
  let clock: VirtualClock
  var engine: Engine
  var model: SyncModel

  init(name: String, clock: VirtualClock, log: SimulatedLog, snapshot: AccountSnapshot? = nil) throws {
    self.name = name
    self.clock = clock
    (engine, model) = try Self.load(name: name, clock: clock, log: log, snapshot: snapshot)
  }

  static func load(name: String, clock: VirtualClock, log: SimulatedLog, snapshot: AccountSnapshot?) throws
    -> (Engine, SyncModel)
  {
    let engine = try HostedFixture.engine(account: "alice", clock: clock)
    let after = snapshot?.cursor ?? 0
    let (model, skipped) = try AccountLoader.load(
      account: "alice", device: name, engine: engine, snapshot: snapshot,
      operations: log.rows.filter { $0.cursor > after }, wallNow: 0, isSynced: HostedFixture.isSynced(engine))
    #expect(skipped == 0)
    return (engine, model)
  }

  func local(_ mutation: Mutation) {
    guard !mutation.writes.isEmpty else { return }
    _ = model.recordLocal(mutation.writes, wallNow: 0)
  }

  func push(_ log: SimulatedLog) {
    let batch = model.outboxBatch(.max)
    guard !batch.isEmpty else { return }
    let last = log.push(device: name, batch)
    _ = model.pushed(batch.map(\.seq))
    _ = model.advanceCursorAfterPush(pushed: batch.count, lastCursor: last)
  }

  func pull(_ log: SimulatedLog, max: Int) {
    let rows = log.rows.filter { $0.cursor > model.cursor }.prefix(max)
    guard let last = rows.last else { return }
    _ = model.applyRemote(rows.map(\.operation), cursor: last.cursor, wallNow: 0)
  }
}

@Suite struct AccountLoadTests {
  /// Two nodes serve one account at once, with skewed clocks, pushing and pulling in random batches. Afterwards both
  /// hold the same state, and so does the account loaded fresh from the log — from nothing, and from a snapshot
  /// taken at any cursor plus the operations after it (the snapshot's JSON round-trips on the way).
  @Test(arguments: 0..<6)
  func nodesAndFreshLoadsAgree(run: Int) throws {
    let seed = UInt64.random(in: 1...UInt64(UInt32.max))
    var random = SeededRandom(seed: seed)
    let log = SimulatedLog()
    let start = 1_700_000_000.0
    let nodes = try [
      SimulatedNode(name: "node-a", clock: VirtualClock(now: start), log: log),
      SimulatedNode(name: "node-b", clock: VirtualClock(now: start + 120), log: log),
    ]
    let infos: [JSONObject?] = [nil, ["region": "north"], ["region": "south"]]
    for _ in 0..<300 {
      let node = nodes[Int.random(in: 0..<2, using: &random)]
      let tip = HostedFixture.tips[Int.random(in: 0..<HostedFixture.tips.count, using: &random)]
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<35:
        let event = HostedFixture.events[Int.random(in: 0..<3, using: &random)]
        node.local(try node.engine.donate(event, info: infos[Int.random(in: 0..<3, using: &random)]).mutation)
      case 35..<50:
        node.local(try node.engine.recordDisplay(tip, duration: Double(Int.random(in: 0..<30, using: &random))))
      case 50..<56: node.local(try node.engine.invalidate(tip, reason: .tipClosed))
      case 56..<60: node.local(try node.engine.resetEligibility(tip))
      case 60..<68:
        node.local(try node.engine.setParameter("level", .int(Int64(Int.random(in: 0..<4, using: &random)))))
      case 68..<72:
        let variants = ["friendly", "terse", "plain"]
        node.local(try node.engine.setVariant("variant.tip", variants[Int.random(in: 0..<3, using: &random)]))
      case 72..<85: node.push(log)
      case 85..<95: node.pull(log, max: Int.random(in: 1..<20, using: &random))
      default: node.clock.advance(by: Double(Int.random(in: 1..<900, using: &random)))
      }
    }
    // Until quiescent: a pull can make an operation of its own (a display budget reached by merged displays).
    for _ in 0..<5 {
      for node in nodes { node.push(log) }
      for node in nodes { node.pull(log, max: .max) }
    }
    #expect(nodes.allSatisfy { $0.model.outboxCount == 0 && $0.model.cursor == Int64(log.rows.count) })
    let expected = comparable(nodes[0].engine)
    #expect(difference(comparable(nodes[1].engine), expected) == nil, "seed \(seed)")

    let fresh = try SimulatedNode(name: "node-c", clock: VirtualClock(now: start + 60), log: log)
    #expect(difference(comparable(fresh.engine), expected) == nil, "seed \(seed): a fresh load differs")
    #expect(fresh.model.outboxCount == 0, "seed \(seed): a fresh load made operations of its own")

    let cut = Int64(Int.random(in: 0...log.rows.count, using: &random))
    let partialEngine = try HostedFixture.engine(account: "alice", clock: VirtualClock(now: start))
    let snapshot = try AccountLoader.snapshot(
      account: "alice", engine: partialEngine, snapshot: nil, operations: Array(log.rows.prefix(Int(cut))),
      isSynced: HostedFixture.isSynced(partialEngine))
    #expect(snapshot.cursor == cut)
    let decoded = try AccountSnapshot(json: try JSONParser.parse(snapshot.json.jsonString))
    #expect(decoded == snapshot, "seed \(seed): the snapshot's JSON does not round-trip")
    let resumed = try SimulatedNode(name: "node-e", clock: VirtualClock(now: start), log: log, snapshot: decoded)
    #expect(
      difference(comparable(resumed.engine), expected) == nil,
      "seed \(seed): snapshot at \(cut) + later operations differs")
  }

  /// A node reloading the account (after a restart, or an eviction) continues its own counters: its next display is
  /// added to what it already contributed, not counted from zero.
  @Test func aReloadedNodeContinuesItsOwnCounters() throws {
    let log = SimulatedLog()
    let clock = VirtualClock(now: 1_700_000_000)
    var node = try SimulatedNode(name: "node-a", clock: clock, log: log)
    for _ in 0..<3 { node.local(try node.engine.donate("e1").mutation) }
    node.local(try node.engine.recordDisplay("count.tip"))
    node.push(log)
    node = try SimulatedNode(name: "node-a", clock: clock, log: log)
    #expect(node.engine.lifetimeCount("e1") == 3)
    node.local(try node.engine.donate("e1").mutation)
    node.local(try node.engine.recordDisplay("count.tip"))
    node.push(log)
    let fresh = try SimulatedNode(name: "node-b", clock: clock, log: log)
    #expect(fresh.engine.lifetimeCount("e1") == 4)
    #expect(fresh.engine.record(of: "count.tip").displayCount == 2)
    #expect(difference(comparable(fresh.engine), comparable(node.engine)) == nil)
  }

  @Test func malformedSnapshotsAreRefusedWithTheirPlace() {
    let cases: [(JSONValue, String)] = [
      (["version": 2, "cursor": 0], "unknown snapshot version"),
      (["version": 1, "cursor": -1], "snapshot.cursor"),
      (["version": 1, "cursor": 0, "rows": [["lifetime", "d", "e1"]]], "snapshot.rows[0]"),
      (["version": 1, "cursor": 0, "donations": ["e1": [[1.0, 3]]]], "snapshot.donations.e1[0] info"),
    ]
    for (json, expected) in cases {
      #expect(throws: HostedError.self) { try AccountSnapshot(json: json) }
      do {
        _ = try AccountSnapshot(json: json)
      } catch {
        #expect(error.message.contains(expected), "\(error.message)")
      }
    }
  }

  /// nil when equal, else the parts that differ (a failure message short enough to read).
  private func difference(_ a: EngineSnapshot, _ b: EngineSnapshot) -> String? {
    guard a != b else { return nil }
    var parts: [String] = []
    for key in Set(a.donations.keys).union(b.donations.keys).sorted() where a.donations[key] != b.donations[key] {
      parts.append("donations[\(key)]: \(a.donations[key]?.count ?? 0) vs \(b.donations[key]?.count ?? 0)")
    }
    for key in Set(a.tipRecords.keys).union(b.tipRecords.keys).sorted() where a.tipRecords[key] != b.tipRecords[key] {
      parts.append(
        "record[\(key)]: \(String(describing: a.tipRecords[key])) vs \(String(describing: b.tipRecords[key]))")
    }
    if a.parameters != b.parameters { parts.append("parameters: \(a.parameters) vs \(b.parameters)") }
    if a.lifetimeCounts != b.lifetimeCounts { parts.append("lifetimes: \(a.lifetimeCounts) vs \(b.lifetimeCounts)") }
    if a.variantAssignments != b.variantAssignments {
      parts.append("variants: \(a.variantAssignments) vs \(b.variantAssignments)")
    }
    if a.cooldownStartedAt != b.cooldownStartedAt {
      parts.append("cooldown: \(String(describing: a.cooldownStartedAt)) vs \(String(describing: b.cooldownStartedAt))")
    }
    return parts.isEmpty ? "other fields differ" : parts.joined(separator: "; ")
  }

  /// What a hosted account's engine holds that the nodes must agree on (everything but the install id and the
  /// `"sync": "local"` tip's record, which stays with the node that made it).
  private func comparable(_ engine: Engine) -> EngineSnapshot {
    var snapshot = engine.snapshot()
    snapshot.tipRecords = snapshot.tipRecords.filter { Engine.tipID(ofRecordKey: $0.key) != "local.tip" }
    return snapshot
  }
}

/// SplitMix64, seeded, so a failing run's seed (in the failure message) repeats it.
struct SeededRandom: RandomNumberGenerator {
  private var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9e37_79b9_7f4a_7c15
    var z = state
    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
    return z ^ (z >> 31)
  }
}
