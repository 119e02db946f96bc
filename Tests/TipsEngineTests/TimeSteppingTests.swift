import Glibc
import Testing
import TipsEngine
import TipsJSON
import TipsTestSupport

/// An engine on a virtual clock whose every mutation is kept as the observer sees it: each change with the instant
/// it is stamped with (a time-driven step's own instant, else the clock's now), and each exposure with its `since`.
final class TimedEngine {
  let clock: VirtualClock
  let engine: Engine
  /// What a subscriber and the lifecycle history see, in order: `instant change` lines.
  var log: [String] = []

  init(now: Timestamp = t0) {
    clock = VirtualClock(now: now)
    engine = Engine(clock: clock)
  }

  func keep(_ mutation: Mutation) {
    let at = mutation.at ?? clock.now()
    for change in mutation.changes { log.append("\(at) \(change)") }
    for case .exposure(let tip, let variant, let since) in mutation.writes {
      log.append("\(at) exposure \(tip)/\(variant) since \(since.map { "\($0)" } ?? "closed")")
    }
  }

  func run(_ body: (Engine) throws -> Mutation) {
    do { keep(try body(engine)) } catch { log.append("\(clock.now()) error \(error)") }
  }

  /// Moves the clock to `instant` (`clock/set`) and applies time, step by step.
  func move(to instant: Timestamp) {
    clock.set(instant)
    for step in engine.advanceTimeInSteps() { keep(step) }
  }

  /// The exposure history entries: `(tip, since)` of every exposure opened.
  var exposuresOpened: [String] { log.filter { $0.contains(" exposure ") && !$0.hasSuffix("closed") } }

  /// Everything an observer can compare: states, group current tips, the durable snapshot.
  func agrees(with other: TimedEngine) -> Bool {
    func groups(_ engine: Engine) -> [String?] { engine.groupIDs.map { try? engine.currentTip(ofGroup: $0) } }
    return engine.states() == other.engine.states() && groups(engine) == groups(other.engine)
      && engine.snapshot() == other.engine.snapshot() && log == other.log
  }

  var observable: String { "\(engine.states())\n\(engine.snapshot())" }
}

@Suite("Time moves one way: every time-driven change at its own instant, whatever the clock's steps")
struct TimeSteppingTests {
  // MARK: - Property: one advance equals the same span in pieces

  /// A random catalog: tips with event rules (plain, windowed), tips that follow tips (`for` delays), schedules on
  /// tips and groups (written with time-zone offsets), holdouts with weights, events with maximum ages.
  static func randomCatalog(_ random: inout SplitMix64) throws -> (tips: [TipDefinition], groups: [TipGroupDefinition])
  {
    func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
    func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
    func offsetText(_ instant: Timestamp) -> String {
      // The same instant written in a random zone: the local wall time and its offset.
      let minutes = pick([0, 60, -300, 330, 540, -570])
      let local = ISO8601.string(from: instant + Double(minutes * 60))
      guard minutes != 0, local.hasSuffix("Z") else { return local }
      let sign = minutes < 0 ? "-" : "+"
      let hh = abs(minutes) / 60
      let mm = abs(minutes) % 60
      return String(local.dropLast()) + "\(sign)\(hh < 10 ? "0" : "")\(hh):\(mm < 10 ? "0" : "")\(mm)"
    }
    func schedule() -> String {
      let from = t0 + Double(pick([-3_600, 0, 1_800, 5_400, 7_200, 86_400]))
      let until = from + Double(pick([600, 3_600, 9_000, 86_400, 200_000]))
      switch random.next() % 3 {
      case 0: return #"{"from": "\#(offsetText(from))"}"#
      case 1: return #"{"until": "\#(offsetText(until))"}"#
      default: return #"{"from": "\#(offsetText(from))", "until": "\#(offsetText(until))"}"#
      }
    }
    let count = 3 + Int(random.next() % 4)
    var tips: [TipDefinition] = []
    for index in 0..<count {
      var rules: [String] = []
      func eventRule() -> String {
        let event = pick(["e0", "e1", "e2"])
        let gte = 1 + random.next() % 3
        guard chance(60) else { return #"{"event": "\#(event)", "count": {"gte": \#(gte)}}"# }
        let within = pick([1.0, 10, 60, 90.008333, 1_440])
        return #"{"event": "\#(event)", "within": {"minutes": \#(within)}, "count": {"gte": \#(gte)}}"#
      }
      if chance(60) { rules.append(eventRule()) }
      if chance(25) { rules.append(#"{"not": \#(eventRule())}"#) }
      if index > 0 && chance(35) {
        let followed = "t\(random.next() % UInt64(index))"
        let delay = pick([nil, 5.0, 90.008333, 1_440])
        rules.append(
          #"{"tip": "\#(followed)", "status": "invalidated""#
            + (delay.map { #", "for": {"minutes": \#($0)}"# } ?? "") + "}")
      }
      var text = #"{"id": "t\#(index)", "title": "T\#(index)", "rules": [\#(rules.joined(separator: ", "))]"#
      if chance(35) { text += #", "schedule": \#(schedule())"# }
      if chance(30) { text += #", "options": {"ignoresDisplayFrequency": true}"# }
      if chance(45) {
        text += #", "variants": {"shown": {"title": "S", "weight": \#(pick([1, 2, 3]))}, "held": {"holdout": true}}"#
      }
      tips.append(try tip(text + "}"))
    }
    var groups: [TipGroupDefinition] = []
    for index in 0..<Int(random.next() % 3) {
      var members = tips.map(\.id).filter { _ in chance(50) }
      if members.isEmpty { members = [tips[0].id] }
      let scheduled: TipSchedule? =
        chance(40) ? try tip(#"{"id": "x", "title": "X", "schedule": \#(schedule())}"#).schedule : nil
      groups.append(
        TipGroupDefinition(
          id: "g\(index)", priority: chance(50) ? .ordered : .firstAvailable, tipIDs: members, schedule: scheduled))
    }
    return (tips, groups)
  }

  /// Sets up both engines identically.
  static func configure(
    _ timed: TimedEngine, _ catalog: (tips: [TipDefinition], groups: [TipGroupDefinition]),
    frequency: DisplayFrequency, maxAges: [String: Double], installID: String, forced: [String]
  ) {
    timed.run { try $0.setInstallID(installID) }
    timed.run { $0.configure(displayFrequency: frequency) }
    for (event, seconds) in maxAges.sorted(by: { $0.key < $1.key }) {
      timed.run { try $0.setDonationMaxAge(event, seconds) }
    }
    timed.run { try $0.register(catalog.tips) }
    for group in catalog.groups { timed.run { try $0.registerGroup(group) } }
    for id in forced { timed.run { try $0.setVariant(id, "held") } }
  }

  /// One random sequence: `whole` advances every span in one `clock/advance`, `pieces` cuts it at random instants
  /// (often exactly on, or just before, the next time-driven instant). After every operation they must agree on
  /// state, group current tips, the durable snapshot and every notification and history entry with its instant.
  static func runSequence(seed: UInt64, operations: Int) throws -> String? {
    var random = SplitMix64(seed: seed)
    func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
    func unit() -> Double { Double(random.next() % 1_000_000) / 1_000_000 }
    let catalog = try randomCatalog(&random)
    let frequency = pick(DisplayFrequency.allCases)
    var maxAges: [String: Double] = [:]
    for event in ["e0", "e1", "e2"] where random.next() % 4 == 0 { maxAges[event] = pick([120.0, 3_600, 5_400.5]) }
    let forced = catalog.tips.filter { !$0.variants.isEmpty && random.next() % 2 == 0 }.map(\.id)
    let installID = "install-\(random.next() % 1_000)"
    let whole = TimedEngine()
    let pieces = TimedEngine()
    for timed in [whole, pieces] {
      configure(timed, catalog, frequency: frequency, maxAges: maxAges, installID: installID, forced: forced)
    }
    let tipIDs = catalog.tips.map(\.id)
    var trace: [String] = []
    for step in 0..<operations {
      let roll = random.next() % 100
      switch roll {
      case 0..<22:
        let event = pick(["e0", "e1", "e2"])
        trace.append("donate \(event)")
        for timed in [whole, pieces] { timed.run { try $0.donate(event).mutation } }
      case 22..<30:
        let id = pick(tipIDs)
        let duration = pick([0.0, 5, 70])
        trace.append("displayed \(id) \(duration)")
        for timed in [whole, pieces] { timed.run { try $0.recordDisplay(id, duration: duration) } }
      case 30..<37:
        let id = pick(tipIDs)
        let reason = pick(InvalidationReason.allCases)
        trace.append("invalidate \(id) \(reason)")
        for timed in [whole, pieces] { timed.run { try $0.invalidate(id, reason: reason) } }
      case 37..<40:
        let id = pick(tipIDs)
        trace.append("resetEligibility \(id)")
        for timed in [whole, pieces] { timed.run { try $0.resetEligibility(id) } }
      case 40..<42:
        trace.append("reset")
        for timed in [whole, pieces] { timed.run { $0.reset() } }
      case 42..<48:
        let seconds = pick([nil, 60, 5_400.5, 86_400])
        trace.append("suppress \(String(describing: seconds))")
        for timed in [whole, pieces] { timed.run { try $0.suppress(seconds: seconds, reason: nil) } }
      case 48..<51:
        trace.append("resume")
        for timed in [whole, pieces] { timed.run { $0.resume() } }
      default:
        // A span: random, exactly to the next instant, just before it, or across several.
        let now = whole.clock.now()
        let next = whole.engine.nextChangeTime()
        let span: Double
        switch random.next() % 5 {
        case 0 where next != nil: span = next! - now
        case 1 where next != nil: span = max(0.001, next! - now - 0.001)
        case 2 where next != nil: span = (next! - now) * Double(2 + random.next() % 6) + unit()
        case 3: span = unit() * 600
        default: span = pick([3_600.0, 14_400, 86_400, 700_000.25]) * (0.5 + unit())
        }
        let target = now + span
        trace.append("advance \(span)")
        whole.move(to: target)
        // The pieces: cut points at random, and on (or just before) the instants met along the way.
        var at = now
        while at < target {
          var cut = at + (target - at) * unit()
          if random.next() % 2 == 0, let instant = pieces.engine.nextChangeTime(), instant < target {
            cut = random.next() % 2 == 0 ? instant : max(at, instant - 0.001)
          }
          if random.next() % 4 == 0 || cut >= target { cut = target }
          pieces.move(to: cut)
          at = cut
        }
      }
      if !whole.agrees(with: pieces) {
        let difference =
          zip(whole.log, pieces.log).first { $0 != $1 }.map { "one advance: \($0.0)\n  in pieces: \($0.1)" }
          ?? "(none: lengths \(whole.log.count) vs \(pieces.log.count))"
        return """
          seed \(seed) diverges after operation \(step) (\(trace.last ?? "")); again: TIPSD_TIME_SEED=\(seed).
          catalog: \(catalog.tips.map(\.json)) \(catalog.groups)
          frequency \(frequency), maxAges \(maxAges), forced \(forced)
          trace: \(trace.joined(separator: "; "))
          first differing entry: \(difference)
          one advance: \(whole.observable)
          in pieces:   \(pieces.observable)
          """
      }
    }
    return nil
  }

  @Test("any clock/advance span equals the same span cut in random pieces (state, history, notifications)")
  func advanceEqualsPieces() throws {
    // A fresh seed each run, printed; a diverging sequence runs again alone with TIPSD_TIME_SEED set to its seed.
    let environment = ProcessInfoSeed.value
    let base = environment ?? UInt64.random(in: 0..<1_000_000_000)
    let sequences = environment == nil ? 300 : 1
    print(
      "TimeSteppingTests.advanceEqualsPieces: seed \(base) (sequences \(base)..<\(base &+ UInt64(sequences));"
        + " one again: TIPSD_TIME_SEED=N)")
    var failures: [String] = []
    for index in 0..<UInt64(sequences) {
      if let failure = try Self.runSequence(seed: base &+ index, operations: 40) { failures.append(failure) }
    }
    if let first = failures.first {
      Issue.record("\(failures.count) of \(sequences) sequences diverge; the first:\n\(first)")
    }
  }
}

/// `TIPSD_TIME_SEED`, when set: the one sequence to run again.
enum ProcessInfoSeed {
  static var value: UInt64? {
    guard let text = getenv("TIPSD_TIME_SEED") else { return nil }
    return UInt64(String(cString: text))
  }
}
