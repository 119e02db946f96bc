import Testing
import TipsEngine
import TipsJSON
import TipsRecords
import TipsSync

@testable import TipsHosted

/// A hosted account loaded after some of its time-driven instants passed (no node held it then) replays them at
/// their own instants: the state is worked out as of the account's last operation, then time moves to now.
@Suite struct AccountTimeTests {
  static let start: Timestamp = 1_700_000_000

  /// A fresh engine with a held-out tip `x` that becomes displayable 90 minutes after an `e` donation (its rule is
  /// "no `e` within 90 minutes"), a tip `s` whose schedule opens at start + 2 h, and an hourly cooldown.
  static func engine(clock: any EngineClock) throws -> Engine {
    let engine = Engine(clock: clock, configuration: EngineConfiguration(canonicalDonationOrder: true))
    _ = try engine.setInstallID("alice")
    _ = engine.configure(displayFrequency: .hourly)
    let from = ISO8601.string(from: start + 7_200)
    _ = try engine.register([
      try TipDefinition(
        json: try JSONParser.parse(
          #"""
          {"id": "x", "title": "X", "rules": [{"not": {"event": "e", "within": {"minutes": 90}, "count": {"gte": 1}}}],
           "options": {"ignoresDisplayFrequency": true},
           "variants": {"shown": {"title": "S"}, "held": {"holdout": true}}}
          """#), path: "tips[0]"),
      try TipDefinition(
        json: try JSONParser.parse(#"{"id": "s", "title": "S", "schedule": {"from": "\#(from)"}}"#), path: "tips[1]"),
    ])
    return engine
  }

  /// What a node stored for the account: the held-out assignment and an `e` donation at `start`, as operations.
  static func storedOperations() throws -> [OperationRow] {
    let clock = VirtualClock(now: start)
    let loaded = try AccountLoader.loadAsOfLastInstant(
      account: "alice", device: "node-a", clock: clock, snapshot: nil, operations: [], wallNow: start,
      makeEngine: engine)
    for step in loaded.replayTime() { _ = loaded.model.recordLocal(step.writes, wallNow: start) }
    _ = loaded.model.recordLocal(try loaded.engine.setVariant("x", "held").writes, wallNow: start)
    _ = loaded.model.recordLocal(try loaded.engine.donate("e").mutation.writes, wallNow: start)
    #expect(loaded.engine.snapshot().exposures.isEmpty)
    return loaded.model.outboxBatch(.max).enumerated().map { index, operation in
      OperationRow(cursor: Int64(index + 1), device: "node-a", seq: operation.seq, payload: operation.payload)
    }
  }

  @Test("an account loaded days later opens the exposure and the schedule at their instants, not at the load")
  func loadReplaysMissedInstants() throws {
    let operations = try Self.storedOperations()
    #expect(AccountLoader.lastInstant(snapshot: nil, operations: operations.map(\.operation)) == Self.start)
    let clock = VirtualClock(now: Self.start + 700_000.25)
    let loaded = try AccountLoader.loadAsOfLastInstant(
      account: "alice", device: "node-b", clock: clock, snapshot: nil, operations: operations,
      wallNow: clock.now(), makeEngine: Self.engine)
    // As the account stood at its last operation: x held back by the window, s before its schedule.
    #expect(loaded.engine.snapshot().exposures.isEmpty)
    #expect(loaded.engine.state(of: "s")?.shouldDisplay == false)
    let steps = loaded.replayTime()
    #expect(loaded.engine.clock.now() == clock.now())
    let exposure = StateWrite.exposure(tipID: "x", variant: "held", since: Self.start + 5_400)
    #expect(steps.first { $0.writes.contains(exposure) }?.at == Self.start + 5_400)
    let shown = Change.tip(TipState(id: "s", status: .available, shouldDisplay: true))
    #expect(steps.first { $0.changes.contains(shown) }?.at == Self.start + 7_200)
    #expect(loaded.engine.snapshot().exposures == ["x\u{1F}held": Self.start + 5_400])
    // The exposure is the account's, stored as this node's operation with its own instant.
    for step in steps { _ = loaded.model.recordLocal(step.writes, wallNow: clock.now()) }
    let payloads = loaded.model.outboxBatch(.max).map(\.payload)
    #expect(payloads.contains { $0.contains("exposure") && $0.contains("1700005400") }, "\(payloads)")

    // Loaded at now instead (what a node did before): the exposure opened at the load.
    let late = try Self.engine(clock: clock)
    _ = try AccountLoader.load(
      account: "alice", device: "node-c", engine: late, snapshot: nil, operations: operations, wallNow: clock.now())
    #expect(late.snapshot().exposures == ["x\u{1F}held": clock.now()])
  }

  @Test("an account whose last instant is not before now (a clock behind another node's) loads at now")
  func noReplayFromTheFuture() throws {
    let operations = try Self.storedOperations()
    let clock = VirtualClock(now: Self.start - 60)
    let loaded = try AccountLoader.loadAsOfLastInstant(
      account: "alice", device: "node-b", clock: clock, snapshot: nil, operations: operations,
      wallNow: clock.now(), makeEngine: Self.engine)
    #expect(loaded.engine.clock.now() == clock.now())
    #expect(loaded.replayTime().allSatisfy { $0.at == nil })
  }
}
