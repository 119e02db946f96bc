import Foundation
import Testing
import TipsEngine
import TipsHosted
import TipsJSON
import TipsStore
import TipsTestSupport

@testable import TipsSync

/// One simulated device in process: an engine on a virtual clock, its datastore (a real SQLite file) and its merge
/// model, committed together as the server's turn commits them.
private final class SimulatedDevice {
  let id: String
  let clock: VirtualClock
  let path: String
  var engine: Engine
  var model: SyncModel
  var store: Datastore

  init(id: String, directory: String, start: Double) throws {
    self.id = id
    clock = VirtualClock(now: start)
    path = "\(directory)/\(id).sqlite"
    store = try Datastore(path: path)
    engine = Engine(clock: clock, configuration: EngineConfiguration(canonicalDonationOrder: true))
    model = try Self.open(engine: engine, store: store, id: id)
  }

  private static func open(engine: Engine, store: Datastore, id: String) throws -> SyncModel {
    engine.restore(try store.load())
    try store.commit(try engine.setInstallID("same-install").writes)
    try store.commit(try engine.defineParameters(SyncFixture.parameterDefinitions()).writes)
    try store.commit(try engine.register(try SyncFixture.tipDefinitions()).writes)
    for (event, limit) in SyncFixture.limits { try store.commit(try engine.setDonationLimit(event, limit).writes) }
    let model = try SyncModel(
      engine: engine, snapshot: try store.loadSync(), account: "acct", device: id, outboxLimit: 100_000,
      isSynced: { [unowned engine] key in engine.definition(of: Engine.tipID(ofRecordKey: key))?.sync != .local })
    try store.commit([], sync: model.bootstrap(wallNow: 0).writes)
    return model
  }

  /// Opens the datastore again. Another test spawning a process at the instant this one closed the file can leave a
  /// child holding the lock's descriptor until it execs (it is close-on-exec): wait for the lock, with a hang guard.
  private static func reopen(_ path: String) throws -> Datastore {
    var opened: Datastore?
    var failure: (any Error)?
    waitUntil {
      do {
        opened = try Datastore(path: path)
        return true
      } catch {
        failure = error
        return false
      }
    }
    guard let opened else { throw failure ?? TestFailure("cannot reopen \(path)") }
    return opened
  }

  /// Commits a step's writes as one transaction.
  func commit(_ writes: [StateWrite], _ effects: SyncEffects) throws {
    try store.commit(writes + effects.mutations.flatMap(\.writes), sync: effects.writes + model.takeMetaWrites())
  }

  /// A local mutation, as `Services.record` handles it.
  func local(_ mutation: Mutation) throws {
    let effects = mutation.writes.isEmpty ? SyncEffects() : model.recordLocal(mutation.writes, wallNow: 0)
    try commit(mutation.writes, effects)
  }

  /// Closes and reopens everything from the datastore, as a restarted daemon does.
  func restart() throws {
    store.close()
    store = try Self.reopen(path)
    engine = Engine(clock: clock, configuration: EngineConfiguration(canonicalDonationOrder: true))
    model = try Self.open(engine: engine, store: store, id: id)
  }
}

/// PostgreSQL's part, simulated: one log of operations keyed by (device, seq), cursors in insertion order.
private struct SimulatedServer {
  var log: [(device: String, seq: Int64, payload: String)] = []
  var keys: Set<String> = []

  mutating func push(_ device: SimulatedDevice, max: Int) throws {
    let batch = device.model.outboxBatch(max)
    guard !batch.isEmpty else { return }
    for operation in batch where keys.insert("\(device.id)/\(operation.seq)").inserted {
      let (seq, payload) = (operation.seq, operation.payload)
      log.append((device.id, seq, payload))
    }
    try device.commit([], device.model.pushed(batch.map(\.seq)))
  }

  func pull(_ device: SimulatedDevice, max: Int) throws {
    let from = Int(device.model.cursor)
    guard from < log.count else { return }
    let rows = log[from..<min(log.count, from + max)]
    let operations = rows.map { SyncOperation(device: $0.device, seq: $0.seq, payload: $0.payload) }
    try device.commit([], device.model.applyRemote(operations, cursor: Int64(from + rows.count), wallNow: 0))
  }

  /// The device is behind the operations kept (#34's retention pruned them): it merges a snapshot of the whole log
  /// instead — made, as a hosted node makes one, by a model that read every operation from nothing.
  func pullSnapshot(_ device: SimulatedDevice, directory: String, name: String) throws {
    let snapshotter = try SimulatedDevice(id: name, directory: directory, start: device.clock.now())
    // As `AccountLoader.snapshot`: a snapshot only folds what was stored; it decides nothing (no budget reached by
    // merged displays invalidates a tip in it — that invalidation would belong to no device).
    snapshotter.model.checksBudgets = false
    let operations = log.map { SyncOperation(device: $0.device, seq: $0.seq, payload: $0.payload) }
    _ = snapshotter.model.applyRemote(operations, cursor: Int64(log.count), wallNow: 0)
    var donations: [String: [Donation]] = [:]
    for event in snapshotter.engine.eventIDs {
      let kept = snapshotter.engine.donations(event)
      if !kept.isEmpty { donations[event] = kept }
    }
    var meta = snapshotter.model.snapshotMeta
    meta[SyncModel.MetaKey.cursor] = nil
    try device.commit(
      [],
      device.model.mergeSnapshot(
        rows: snapshotter.model.stateRows(), meta: meta, donations: donations, cursor: Int64(log.count), wallNow: 0))
    snapshotter.store.close()
  }
}

/// The merge model alone, in process: devices make random changes on skewed clocks while operations travel in random
/// batches (and devices restart from their datastores); once everything is delivered every device holds the same
/// state. Fast enough to try many interleavings; the suites with real daemons and PostgreSQL are in SyncDaemonTests.
@Suite struct MergeConvergenceTests {
  static let baseSeed = SeededGenerator.seed()

  @Test(arguments: 0..<12)
  func devicesConvergeWhateverTheInterleaving(run: Int) {
    RunSeed(base: Self.baseSeed, offset: UInt64(run) &* 7919).run(
      "MergeConvergenceTests run \(run)", devicesConvergeWhateverTheInterleaving)
  }

  func devicesConvergeWhateverTheInterleaving(_ seed: RunSeed) throws {
    var random = SeededGenerator(seed: seed.value)
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let start = 1_700_000_000.0
    let devices = try [-3600.0, 0, 3600].enumerated().map { index, skew in
      try SimulatedDevice(id: "device-\(index)", directory: directory, start: start + skew)
    }
    var server = SimulatedServer()
    let infos: [JSONObject?] = [nil, ["region": "north"], ["region": "south"], ["region": "north", "n": 1]]
    for step in 0..<400 {
      let device = devices[Int.random(in: 0..<devices.count, using: &random)]
      let engine = device.engine
      let tip = SyncFixture.tips[Int.random(in: 0..<SyncFixture.tips.count, using: &random)]
      let roll = Int.random(in: 0..<100, using: &random)
      switch roll {
      case 0..<30:
        let event = SyncFixture.events[Int.random(in: 0..<SyncFixture.events.count, using: &random)]
        try device.local(
          try engine.donate(event, info: infos[Int.random(in: 0..<infos.count, using: &random)]).mutation)
      case 30..<45:
        try device.local(try engine.recordDisplay(tip, duration: Double(Int.random(in: 0..<30, using: &random))))
      case 45..<52:
        let reason = InvalidationReason.allCases[Int.random(in: 0..<4, using: &random)]
        try device.local(try engine.invalidate(tip, reason: reason))
      case 52..<58:
        try device.local(try engine.resetEligibility(tip))
      case 58..<64:
        if Bool.random(using: &random) {
          try device.local(try engine.setParameter("loggedIn", .bool(Bool.random(using: &random))))
        } else {
          try device.local(try engine.setParameter("level", .int(Int64.random(in: 0..<4, using: &random))))
        }
      case 64..<66 where step % 97 == 0:
        try device.local(engine.reset())
      case 66..<74:
        device.clock.advance(by: Double(Int.random(in: 0..<900, using: &random)))
        try device.local(engine.advanceTime())
      case 74..<86:
        try server.push(device, max: Int.random(in: 1..<8, using: &random))
      case 86..<95:
        try server.pull(device, max: Int.random(in: 1..<12, using: &random))
      case 95..<98:
        try server.pullSnapshot(device, directory: directory, name: "snapshot-\(step)")
      default:
        try device.restart()
      }
    }
    // Deliver everything (a budget reached by merged displays makes new operations: repeat until quiet).
    var rounds = 0
    while devices.contains(where: { $0.model.outboxCount > 0 || Int($0.model.cursor) < server.log.count }) {
      for device in devices { try server.push(device, max: 1000) }
      for device in devices { try server.pull(device, max: 100_000) }
      rounds += 1
      try #require(rounds < 20, "no quiescence after 20 rounds (\(seed))")
    }
    let instant = devices.map { $0.clock.now() }.max()! + 1
    for device in devices {
      device.clock.set(instant)
      try device.local(device.engine.advanceTime())
    }
    let reference = devices[0]
    for device in devices.dropFirst() {
      for tip in SyncFixture.syncedTips {
        #expect(device.engine.state(of: tip) == reference.engine.state(of: tip), "\(tip) on \(device.id) (\(seed))")
        #expect(device.engine.record(of: tip) == reference.engine.record(of: tip), "\(tip) on \(device.id) (\(seed))")
      }
    }
    let states = try devices.map { device in
      let live = ComparableState(device.engine.snapshot())
      try device.restart()
      let reloaded = ComparableState(device.engine.snapshot())
      #expect(live == reloaded, "\(device.id) reloads what it held (\(seed))")
      return live
    }
    if ProcessInfo.processInfo.environment["TIPSD_SYNC_DUMP"] != nil {
      print("operations: \(server.log.count), \(seed)\n\(states[0])")
    }
    for (index, state) in states.enumerated().dropFirst() {
      #expect(
        state == states[0], "device-\(index) differs from device-0 (\(seed)):\n\(state)\n--- vs ---\n\(states[0])")
    }
  }
}
