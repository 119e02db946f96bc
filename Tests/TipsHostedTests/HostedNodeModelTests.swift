import Foundation
import Testing

@testable import TipsHosted

/// Model-based tests of ``HostedNode`` (issue #44): seeded random event sequences checked against a small reference
/// model after every step. `TIPSD_NODE_MODEL_SEED` replays one seed (or a comma-separated list); `TIPSD_NODE_MODEL_STEPS` sets each run's length
/// (`TIPSD_NODE_MODEL_RUNS` the number of seeds when none is given).
@Suite struct HostedNodeModelTests {
  @Test func randomEventSequencesKeepEveryInvariant() {
    let environment = ProcessInfo.processInfo.environment
    let steps = environment["TIPSD_NODE_MODEL_STEPS"].flatMap(Int.init) ?? 3_000
    let seeds: [UInt64]
    if let given = environment["TIPSD_NODE_MODEL_SEED"] {
      seeds = given.split(separator: ",").compactMap { UInt64($0) }
    } else {
      let runs = environment["TIPSD_NODE_MODEL_RUNS"].flatMap(Int.init) ?? 8
      seeds = (0..<runs).map { _ in UInt64.random(in: 1...999_999) }
    }
    for seed in seeds {
      print("HostedNodeModelTests: seed \(seed), \(steps) steps (TIPSD_NODE_MODEL_SEED=\(seed) replays it)")
      var model = NodeModel(seed: seed)
      for step in 0..<steps {
        model.step()
        if let violation = model.violations.first {
          Issue.record("seed \(seed) step \(step): \(violation)")
          return
        }
      }
      model.drain()
      if let violation = model.violations.first {
        Issue.record("seed \(seed) after draining: \(violation)")
        return
      }
      #expect(model.released > 0 && model.commitsStarted > 0 && model.pullsStarted > 0, "seed \(seed)")
    }
  }
}

struct SplitMix: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// The reference: what the driver has asked for and what each session waits for, kept from the actions alone.
struct NodeModel {
  enum Wait: Equatable { case need(String), commit }

  var node = HostedNode(capacity: 3, compactEvery: 4, pullBackoff: (0.5, 4))
  var random: SplitMix
  let accountNames = (0..<6).map { "a\($0)" }
  var now = 0.0
  var clock = 0
  var nextSession = 1
  var sessions: [Int: String] = [:]
  var awaiting: [Int: Wait] = [:]
  /// Sessions whose request ran (they may end a turn).
  var ran: Set<Int> = []
  var resident: Set<String> = []
  var loads: [String: Int] = [:]  // account → step its load started
  var pulls: [String: Int] = [:]
  var commits: [Int: String] = [:]
  var compacting: Set<String> = []
  var needsReload: Set<String> = []
  /// Notices (or a link's return) not yet followed by a pull or load that started after them: account → step.
  var owed: [String: Int] = [:]
  var linkUp = true
  var violations: [String] = []
  var released = 0
  var commitsStarted = 0
  var pullsStarted = 0

  init(seed: UInt64) { random = SplitMix(state: seed) }

  mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

  mutating func step() {
    clock += 1
    now += Double.random(in: 0...0.2, using: &random)
    let roll = Int.random(in: 0..<100, using: &random)
    switch roll {
    case 0..<8:
      let account = accountNames.randomElement(using: &random)!
      let session = nextSession
      nextSession += 1
      sessions[session] = account
      send(.sessionOpened(session: session, account: account))
    case 8..<11:
      guard let session = sessions.keys.sorted().randomElement(using: &random) else { return }
      sessions[session] = nil
      awaiting[session] = nil
      ran.remove(session)
      send(.sessionClosed(session: session))
    case 11..<30:
      let free = sessions.keys.sorted().filter { awaiting[$0] == nil }
      guard let session = free.randomElement(using: &random) else { return }
      ran.remove(session)
      awaiting[session] = .need(sessions[session]!)
      send(.need(session: session))
    case 30..<42:
      guard let first = ran.sorted().randomElement(using: &random), let account = sessions[first] else { return }
      let batch = ran.sorted().filter { sessions[$0] == account && (chance(50) || $0 == first) }
      for session in batch {
        ran.remove(session)
        awaiting[session] = .commit
      }
      send(.turnEnded(account: account, sessions: batch))
    case 42..<54:
      guard let account = loads.keys.sorted().randomElement(using: &random) else { return }
      let ok = chance(85)
      loads[account] = nil
      send(.loaded(account: account, ok: ok, now: now))
    case 54..<66:
      guard let account = pulls.keys.sorted().randomElement(using: &random) else { return }
      let ok = chance(80)
      let behind = ok && chance(5)
      pulls[account] = nil
      send(.pulled(account: account, ok: ok, behindRetention: behind, now: now))
    case 66..<80:
      guard let id = commits.keys.sorted().randomElement(using: &random) else { return }
      send(.committed(commit: id, ok: chance(85)))
    case 80..<88:
      send(.notice(account: accountNames.randomElement(using: &random)!))
    case 88..<90:
      linkUp.toggle()
      send(.linkChanged(up: linkUp))
    case 90..<95:
      send(.tick(now: now))
    case 95..<98:
      guard let account = compacting.sorted().randomElement(using: &random) else { return }
      compacting.remove(account)
      send(.compacted(account: account))
    default:
      guard chance(30) else { return }
      let account = accountNames.randomElement(using: &random)!
      send(.deleted(account: account))
    }
  }

  /// Completes everything in flight, successfully, with the link up and time passing, until nothing is left.
  mutating func drain() {
    if !linkUp {
      linkUp = true
      send(.linkChanged(up: true))
    }
    for _ in 0..<10_000 {
      clock += 1
      if let account = loads.keys.sorted().first {
        loads[account] = nil
        send(.loaded(account: account, ok: true, now: now))
      } else if let account = pulls.keys.sorted().first {
        pulls[account] = nil
        send(.pulled(account: account, ok: true, behindRetention: false, now: now))
      } else if let id = commits.keys.sorted().first {
        send(.committed(commit: id, ok: true))
      } else if let account = compacting.sorted().first {
        compacting.remove(account)
        send(.compacted(account: account))
      } else if node.accounts.values.contains(where: { record in
        if case .resident(let engine) = record.residence { engine.pullRetryAt != nil } else { false }
      }) {
        now += 60
        send(.tick(now: now))
      } else {
        break
      }
    }
    for (session, wait) in awaiting.sorted(by: { $0.key < $1.key }) {
      violations.append("session \(session) still waits (\(wait)) with nothing in flight")
    }
    for (account, since) in owed.sorted(by: { $0.key < $1.key }) {
      violations.append("a notice for \(account) at step \(since) was never followed by a pull")
    }
  }

  mutating func send(_ event: HostedNode.Event) {
    // The reference's view of the event itself.
    switch event {
    case .committed(let id, let ok):
      if let account = commits.removeValue(forKey: id), !ok, resident.contains(account) {
        needsReload.insert(account)
      }
    case .notice(let account):
      if resident.contains(account) { owed[account] = owed[account] ?? clock }
    case .linkChanged(true):
      for account in resident where owed[account] == nil { owed[account] = clock }
    case .pulled(let account, true, false, _):
      if let since = owed[account], let started = pullStarts[account], started >= since { owed[account] = nil }
    case .loaded(let account, true, _):
      needsReload.remove(account)
      if let since = owed[account], let started = loadStarts[account], started > since { owed[account] = nil }
    default: break
    }
    let actions = node.handle(event)
    for action in actions { perform(action) }
    check()
  }

  var pullStarts: [String: Int] = [:]
  var loadStarts: [String: Int] = [:]

  mutating func perform(_ action: HostedNode.Action) {
    switch action {
    case .load(let account):
      if node.phase(of: account) != .loading && node.phase(of: account) != .reloading {
        violations.append("load of \(account) while \(String(describing: node.phase(of: account)))")
      }
      resident.insert(account)
      loads[account] = clock
      loadStarts[account] = clock
    case .pull(let account):
      guard linkUp else { return violations.append("a pull of \(account) started with the link down") }
      pulls[account] = clock
      pullStarts[account] = clock
      pullsStarted += 1
    case .commit(let account, let id):
      if loads[account] != nil { violations.append("commit \(id) of \(account) while it loads or reloads") }
      if needsReload.contains(account) {
        violations.append("commit \(id) of \(account) after a failed commit, before a reload")
      }
      commits[id] = account
      commitsStarted += 1
    case .release(let released, let ok):
      for session in released {
        guard let wait = awaiting.removeValue(forKey: session) else {
          violations.append("session \(session) released but not waiting (twice, or never parked)")
          continue
        }
        self.released += 1
        if ok, case .need(let account) = wait {
          if node.phase(of: account) != .idle {
            violations.append(
              "session \(session) ran on \(account) while \(String(describing: node.phase(of: account)))")
          }
          ran.insert(session)
        }
      }
    case .evict(let account):
      resident.remove(account)
      loads[account] = nil
      pulls[account] = nil
      owed[account] = nil
      needsReload.remove(account)
      compacting.remove(account)
      for (id, owner) in commits where owner == account { commits[id] = nil }
    case .closeSession(let session):
      guard sessions.removeValue(forKey: session) != nil else {
        return violations.append("closeSession \(session) for no open session")
      }
      if awaiting[session] != nil { violations.append("session \(session) closed while still waiting") }
      ran.remove(session)
    case .compact(let account):
      compacting.insert(account)
    case .armTimer(let at):
      if at < now { violations.append("timer armed in the past (\(at) < \(now))") }
    }
  }

  mutating func check() {
    let nodeResident = node.residentAccounts
    let orphaned = node.orphanedAccounts
    if !nodeResident.isDisjoint(with: orphaned) {
      violations.append("resident and orphaned: \(nodeResident.intersection(orphaned).sorted())")
    }
    if nodeResident != resident {
      violations.append("resident \(nodeResident.sorted()), the actions say \(resident.sorted())")
    }
    let withSessions = Set(sessions.values)
    if orphaned != withSessions.subtracting(resident) {
      violations.append("orphaned \(orphaned.sorted()), expected \(withSessions.subtracting(resident).sorted())")
    }
    for (account, _) in owed where pulls[account] == nil && loads[account] == nil && !node.owesPull(account) {
      violations.append("\(account) owes a pull after a notice, and nothing will start one")
    }
    for account in needsReload where node.engine(of: account).map({ !$0.reloadDue && $0.phase != .reloading }) ?? false
    {
      violations.append("\(account)'s failed commit is forgotten (no reload due)")
    }
    for (session, wait) in awaiting {
      let expected: HostedNode.Waiting? =
        switch wait {
        case .need(let account): .account(account)
        case .commit: node.waiting[session].flatMap { if case .commit = $0 { $0 } else { nil } }
        }
      if node.waiting[session] != expected || expected == nil {
        violations.append(
          "session \(session) waits for \(wait); the node says \(String(describing: node.waiting[session]))")
      }
    }
  }
}
