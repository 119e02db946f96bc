import Testing

@testable import TipsSync

/// One PostgreSQL connection's life without PostgreSQL (``LinkStateMachine``): what a hosted node's links and a
/// device's sync pump both run.
@Suite struct LinkStateMachineTests {
  typealias Machine = LinkStateMachine

  static let voice = Machine.Voice(
    unreachable: { .init(.warning, "unreachable", [("error", $0)]) },
    stillUnreachable: { _ in nil },
    ready: { afterFailure in afterFailure ? .init(.info, "reachable again", []) : nil },
    incompatible: { .init(.error, "too new", [("reason", $0)]) })

  func ready() -> Machine {
    var machine = Machine(retryMax: 1, voice: Self.voice)
    #expect(machine.start() == [.connect] && machine.phase == .connecting)
    #expect(machine.connected() == [.migrate] && machine.phase == .migrating)
    #expect(machine.migrated(version: 11, supported: 11) == [.prepare] && machine.phase == .preparing)
    #expect(machine.prepared() == [] && machine.phase == .ready)
    return machine
  }

  @Test func connectMigratePrepareThenReady() {
    var machine = ready()
    // Events out of order change nothing.
    #expect(machine.connected() == [] && machine.prepared() == [] && machine.start() == [])
    #expect(machine.migrated(version: 1, supported: 11) == [])
    #expect(machine.phase == .ready && machine.lastError == nil)
  }

  @Test func aFailureAtAnyStepClosesBacksOffAndWarnsOnceUntilReadyAgain() {
    var machine = ready()
    var delays: [Double] = []
    for step in 0..<5 {
      let actions = machine.failed("lost\n\tthe connection \(step)")
      #expect(actions.first == .closeConnection && machine.phase == .disconnected)
      #expect(machine.lastError == "lost the connection \(step)")
      let warnings = actions.filter { if case .log = $0 { true } else { false } }
      #expect(warnings.count == (step == 0 ? 1 : 0))
      for case .retry(let delay) in actions { delays.append(delay) }
      #expect(machine.retryDue() == [.connect])
      // Fail at a different step each time: connecting, migrating, preparing.
      if step % 3 >= 1 { _ = machine.connected() }
      if step % 3 == 2 { _ = machine.migrated(version: 1, supported: 1) }
    }
    #expect(delays == [0.1, 0.2, 0.4, 0.8, 1])
    _ = machine.connected()
    _ = machine.migrated(version: 1, supported: 1)
    #expect(machine.prepared() == [.log(.init(.info, "reachable again", []))])
    #expect(machine.lastError == nil && machine.retryDelay == 0.1)
  }

  @Test func anAnswerThatWaitsPastTheTimeoutLosesTheLink() {
    var machine = ready()
    #expect(machine.waited(nil, timeout: 3) == [] && machine.waited(2.9, timeout: 3) == [])
    let actions = machine.waited(3, timeout: 3)
    #expect(actions.first == .closeConnection && machine.phase == .disconnected)
    #expect(machine.lastError == "PostgreSQL did not answer within 3 s; connecting again")
    // Not ready: the watchdog's ticks change nothing.
    #expect(machine.waited(100, timeout: 3) == [])
  }

  @Test func aNewerSchemaStopsForGoodAndStoppingIsFinal() {
    var machine = Machine(retryMax: 1, voice: Self.voice)
    _ = machine.start()
    _ = machine.connected()
    let actions = machine.migrated(version: 12, supported: 11)
    #expect(actions.first == .closeConnection && machine.phase == .incompatible)
    #expect(machine.lastError == "the database's tipsd schema is version 12, newer than this tipsd understands (11)")
    #expect(machine.failed("x") == [] && machine.retryDue() == [] && machine.start() == [])
    var stopped = ready()
    #expect(stopped.stop() == [.closeConnection] && stopped.phase == .stopped)
    #expect(stopped.stop() == [] && stopped.failed("late") == [] && stopped.retryDue() == [])
  }
}
