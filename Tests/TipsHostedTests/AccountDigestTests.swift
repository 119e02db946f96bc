import Testing
import TipsEngine
import TipsJSON
import TipsRecords
import TipsSync

@testable import TipsHosted

/// `tipsd.ops`, simulated: cursors in commit order, one copy per (device, seq).
private final class DigestLog {
  var rows: [OperationRow] = []
  var keys: Set<String> = []

  func push(device: String, _ batch: [PendingOperation]) -> Int64 {
    for operation in batch where keys.insert("\(device)/\(operation.seq)").inserted {
      let (seq, payload) = (operation.seq, operation.payload)
      rows.append(OperationRow(cursor: Int64(rows.count + 1), device: device, seq: seq, payload: payload))
    }
    return Int64(rows.count)
  }
}

/// A hosted node's copy of one account, loaded the way the service installs one (as of its last instant, then time
/// replayed and recorded), changed locally, committed and pulled.
private final class DigestNode {
  let name: String
  let clock: VirtualClock
  var engine: Engine
  var model: SyncModel

  init(name: String, clock: VirtualClock, log: DigestLog) throws {
    self.name = name
    self.clock = clock
    (engine, model) = try Self.load(name: name, clock: clock, log: log)
  }

  static func load(name: String, clock: VirtualClock, log: DigestLog) throws -> (Engine, SyncModel) {
    let loaded = try AccountLoader.loadAsOfLastInstant(
      account: "alice", device: name, clock: clock, snapshot: nil, operations: log.rows, wallNow: 0
    ) { try HostedFixture.engine(account: "alice", clock: $0) }
    let model = loaded.model
    for step in loaded.replayTime() where !step.writes.isEmpty { _ = model.recordLocal(step.writes, wallNow: 0) }
    return (loaded.engine, model)
  }

  /// Read again from the log: what the outbox held is gone (a failed commit's reload, a restart).
  func reload(_ log: DigestLog) throws { (engine, model) = try Self.load(name: name, clock: clock, log: log) }

  func local(_ mutation: Mutation) {
    guard !mutation.writes.isEmpty else { return }
    _ = model.recordLocal(mutation.writes, wallNow: 0)
  }

  func push(_ log: DigestLog) {
    let batch = model.outboxBatch(.max)
    guard !batch.isEmpty else { return }
    let last = log.push(device: name, batch)
    _ = model.pushed(batch.map(\.seq))
    _ = model.advanceCursorAfterPush(pushed: batch.count, lastCursor: last)
  }

  func pull(_ log: DigestLog) {
    let rows = log.rows.filter { $0.cursor > model.cursor }
    guard let last = rows.last else { return }
    _ = model.applyRemote(rows.map(\.operation), cursor: last.cursor, wallNow: 0)
  }

  var digest: AccountDigest { AccountDigest(model: model, engine: engine) }
}

@Suite struct AccountDigestTests {
  /// A node's copy and the account loaded afresh from the same rows give one digest; the digest holds what matters
  /// (a record, a lifetime, a parameter, the model's rows).
  @Test func aNodeAndAFreshLoadAgree() throws {
    let log = DigestLog()
    let clock = VirtualClock(now: 1_700_000_000)
    let node = try DigestNode(name: "node-a", clock: clock, log: log)
    for _ in 0..<3 { node.local(try node.engine.donate("e1").mutation) }
    node.local(try node.engine.recordDisplay("window.tip", duration: 5))
    node.local(try node.engine.invalidate("count.tip", reason: .tipClosed))
    node.local(try node.engine.setParameter("level", .int(3)))
    node.push(log)
    clock.advance(by: 30)
    let fresh = try DigestNode(name: "node-a", clock: clock, log: log)
    #expect(node.digest == fresh.digest)
    #expect(node.digest.lines.contains("lifetime e1=3"))
    #expect(node.digest.lines.contains("parameter level=3"))
    #expect(node.digest.lines.contains { $0.hasPrefix("record count.tip=") && $0.contains("invalidated tipClosed") })
    #expect(node.digest.lines.contains { $0.hasPrefix("record window.tip=count 1, duration 5.0") })
    #expect(node.digest.lines.contains { $0.hasPrefix("state ") })
  }

  /// An engine gone apart from its own model — a tip shown invalidated that no operation invalidated, seed 112's
  /// shape — leaves the model's rows equal to PostgreSQL's: only the engine's lines tell it.
  @Test func anEngineApartFromItsModelIsTold() throws {
    let log = DigestLog()
    let clock = VirtualClock(now: 1_700_000_000)
    let node = try DigestNode(name: "node-a", clock: clock, log: log)
    node.local(try node.engine.recordDisplay("count.tip"))
    node.push(log)
    var record = node.engine.record(forKey: "count.tip")
    record.invalidationReason = .tipClosed
    record.invalidatedAt = clock.now()
    _ = node.engine.applySyncedRecord(record, forKey: "count.tip")
    let fresh = try DigestNode(name: "node-b", clock: clock, log: log)
    #expect(Set(node.model.stateRows()) == Set(fresh.model.stateRows()))
    let (ours, theirs) = node.digest.difference(from: fresh.digest)
    #expect(ours.count == 1 && ours[0].hasPrefix("record count.tip=") && ours[0].contains("invalidated tipClosed"))
    #expect(theirs.count == 1 && theirs[0].hasPrefix("record count.tip=") && !theirs[0].contains("invalidated"))
  }

  /// An operation PostgreSQL holds that the node never merged shows in the model's rows and the engine's lines.
  @Test func anOperationNeverMergedIsTold() throws {
    let log = DigestLog()
    let clock = VirtualClock(now: 1_700_000_000)
    let node = try DigestNode(name: "node-a", clock: clock, log: log)
    let other = try DigestNode(name: "node-b", clock: clock, log: log)
    node.local(try node.engine.donate("e2").mutation)
    node.push(log)
    other.pull(log)
    other.local(try other.engine.donate("e2").mutation)
    other.push(log)
    // node-a's cursor passes node-b's operation without merging it (a skipped pull).
    node.model.cursor = Int64(log.rows.count)
    let fresh = try DigestNode(name: "node-c", clock: clock, log: log)
    #expect(other.digest == fresh.digest)
    let (ours, theirs) = node.digest.difference(from: fresh.digest)
    #expect(ours.contains("lifetime e2=1") && theirs.contains("lifetime e2=2"))
    #expect(theirs.contains { $0.hasPrefix("state lifetime node-b e2=") })
  }
}

extension AccountDigestTests {
  /// Seed 112's divergence (#44), deterministically: a node invalidates a tip; later it resets the tip's eligibility,
  /// and that commit is given up on (its answer never came); the node reads the account again — the reset is not
  /// there — and then the old backend commits it after all (a given-up writer's late commit; a killed node's commit
  /// landing after its restart read the account). Every other node pulls the reset: available. The node itself must
  /// too: its reload's `since` (the first seq of its own it skips when pulled back) was taken from the engine's clock
  /// held at the account's last stored instant — below the reset's seq — so it skipped the reset as already applied,
  /// and stayed invalidated for good while PostgreSQL and the other nodes said available.
  @Test func aNodesOwnOperationStoredAfterItsReloadIsMergedThere() throws {
    let log = DigestLog()
    let start = 1_700_000_000.0
    let node = try DigestNode(name: "node-a", clock: VirtualClock(now: start), log: log)
    let other = try DigestNode(name: "node-b", clock: VirtualClock(now: start), log: log)
    node.local(try node.engine.invalidate("count.tip", reason: .tipClosed))
    node.push(log)
    other.pull(log)
    node.clock.advance(by: 1)
    node.local(try node.engine.resetEligibility("count.tip"))
    let unanswered = node.model.outboxBatch(.max)
    #expect(unanswered.count == 1)
    node.clock.advance(by: 3)  // --postgres-timeout: given up on
    try node.reload(log)
    #expect(node.engine.record(forKey: "count.tip").invalidationReason == .tipClosed)
    _ = log.push(device: "node-a", unanswered)  // committed after all
    node.pull(log)
    other.pull(log)
    other.clock.advance(by: 4)
    let fresh = try DigestNode(name: "node-c", clock: other.clock, log: log)
    #expect(fresh.engine.record(forKey: "count.tip").invalidationReason == nil)
    #expect(other.engine.record(forKey: "count.tip").invalidationReason == nil)
    #expect(
      node.engine.record(forKey: "count.tip").invalidationReason == nil,
      "node-a skipped its own reset, stored after it read the account again")
    #expect(node.digest == fresh.digest)
    #expect(node.model.cursor == fresh.model.cursor)
  }

  /// Three nodes serving one account's budget tip with the drill's mix (displays, invalidations, resets), commits,
  /// pulls, failed commits (the outbox lost, the account read again), restarts and late commits (an operation stored
  /// after its node read the account again); once quiet, every node agrees with the account loaded afresh.
  @Test(arguments: 1...60)
  func aFleetWithLateCommitsConverges(seed: UInt64) throws {
    var random = SeededRandom(seed: seed)
    let log = DigestLog()
    let start = 1_700_000_000.0
    let nodes = try (0..<3).map {
      try DigestNode(name: "node\($0)", clock: VirtualClock(now: start + Double($0) * 0.01), log: log)
    }
    var trail: [String] = []
    for _ in 0..<200 {
      let index = Int.random(in: 0..<3, using: &random)
      let node = nodes[index]
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<15:
        node.local(try node.engine.recordDisplay("variant.tip", duration: 1))
        trail.append("node\(index) display")
      case 15..<25:
        node.local(try node.engine.invalidate("variant.tip", reason: .tipClosed))
        trail.append("node\(index) invalidate")
      case 25..<35:
        node.local(try node.engine.resetEligibility("variant.tip"))
        trail.append("node\(index) reset")
      case 35..<60:
        node.push(log)
        trail.append("node\(index) commit")
      case 60..<80:
        node.pull(log)
        trail.append("node\(index) pull")
      case 80..<85:
        try node.reload(log)
        trail.append("node\(index) failed commit, read again")
      case 85..<88:
        node.push(log)
        try node.reload(log)
        trail.append("node\(index) restart")
      case 88..<92:
        let unanswered = node.model.outboxBatch(.max)
        node.clock.advance(by: 0.01)
        try node.reload(log)
        _ = log.push(device: node.name, unanswered)
        trail.append("node\(index) read again, then its \(unanswered.count) operations committed late")
      default:
        let step = Double(Int.random(in: 1..<50, using: &random)) / 100
        for each in nodes { each.clock.advance(by: step) }
      }
    }
    for _ in 0..<5 {
      for node in nodes { node.push(log) }
      for node in nodes { node.pull(log) }
    }
    let fresh = try DigestNode(name: "fresh", clock: nodes[0].clock, log: log)
    for (index, node) in nodes.enumerated() {
      let (ours, theirs) = node.digest.difference(from: fresh.digest)
      #expect(
        ours.isEmpty && theirs.isEmpty,
        "seed \(seed) node\(index): only here \(ours), only in PostgreSQL \(theirs); last steps \(trail.suffix(20))")
    }
  }
}
