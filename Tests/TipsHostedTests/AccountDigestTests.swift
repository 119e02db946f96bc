import Testing
import TipsEngine
import TipsJSON
import TipsSync

@testable import TipsHosted

/// `tipsd.ops`, simulated: cursors in commit order, one copy per (device, seq).
private final class DigestLog {
  var rows: [StoredOperation] = []
  var keys: Set<String> = []

  func push(device: String, _ batch: [(seq: Int64, payload: String)]) -> Int64 {
    for (seq, payload) in batch where keys.insert("\(device)/\(seq)").inserted {
      rows.append(StoredOperation(cursor: Int64(rows.count + 1), device: device, seq: seq, payload: payload))
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
