import Testing

@testable import TipsSync

/// The pump's decisions without PostgreSQL: each path's actions, in order.
@Suite struct SyncPumpStateMachineTests {
  typealias Machine = SyncPumpStateMachine

  func connectedMachine(outboxHasWork: Bool = false) -> (Machine, [Machine.Action]) {
    var machine = Machine(server: "postgresql://db/***", account: "alice", pullBatch: 100, retryMax: 2)
    #expect(machine.start() == [.connect])
    #expect(machine.connected() == [.run(.migrate)])
    #expect(machine.migrated(version: 2, supported: 2) == [.run(.listen)])
    let actions = machine.listening(outboxHasWork: outboxHasWork)
    return (machine, actions)
  }

  func runs(_ actions: [Machine.Action]) -> [Machine.Statement] {
    actions.compactMap { if case .run(let statement) = $0 { statement } else { nil } }
  }

  @Test func connectingCatchesUpFirstThenPushes() {
    var (machine, actions) = connectedMachine(outboxHasWork: true)
    #expect(machine.phase == .connected)
    // Connected: logged, and a catch-up pull before any push (NOTIFYs sent while away are gone).
    #expect(
      actions.first == .log(.init(.info, "sync connected", [("server", "postgresql://db/***"), ("account", "alice")])))
    #expect(runs(actions) == [.pull])
    // One statement at a time: a kick while the pull runs does nothing.
    #expect(machine.kicked(outboxHasWork: true) == [])
    #expect(machine.pulled(rows: 3, outboxHasWork: true) == [.run(.push)])
    #expect(machine.pushed(outboxHasWork: false) == [])
    #expect(machine.kicked(outboxHasWork: true) == [.run(.push)])
  }

  @Test func aNotifyOrAFullPagePullsAgainBeforePushing() {
    var (machine, actions) = connectedMachine()
    #expect(runs(actions) == [.pull])
    // A NOTIFY while the pull runs is remembered, not lost.
    #expect(machine.notified(outboxHasWork: true) == [])
    #expect(machine.pulled(rows: 5, outboxHasWork: true) == [.run(.pull)])
    // A full page means more may wait.
    #expect(machine.pulled(rows: 100, outboxHasWork: true) == [.run(.pull)])
    #expect(machine.pulled(rows: 0, outboxHasWork: true) == [.run(.push)])
    #expect(machine.pushed(outboxHasWork: false) == [])
    #expect(machine.notified(outboxHasWork: false) == [.run(.pull)])
  }

  @Test func failuresBackOffDoublingToTheLimitAndWarnOnce() {
    var (machine, _) = connectedMachine()
    var delays: [Double] = []
    var warnings = 0
    for attempt in 0..<6 {
      let failed =
        attempt == 0
        ? machine.statementFailed("push failed", message: "server closed\n\tthe connection")
        : machine.connectionFailed("connection refused")
      #expect(machine.phase == .disconnected && !machine.busy)
      #expect(failed.first == .closeConnection)
      for action in failed {
        if case .retry(let seconds) = action { delays.append(seconds) }
        if case .log(let line) = action, line.level == .warning { warnings += 1 }
      }
      #expect(machine.retryDue() == [.connect])
      #expect(machine.connected() == [.run(.migrate)])
    }
    #expect(delays == [0.1, 0.2, 0.4, 0.8, 1.6, 2])
    #expect(warnings == 1)
    // libpq's continuation lines are joined into one.
    #expect(machine.lastError == "connection refused")
    // A success resets the backoff and the warning; the catch-up runs again.
    #expect(machine.migrated(version: 1, supported: 2) == [.run(.listen)])
    #expect(runs(machine.listening(outboxHasWork: false)) == [.pull])
    #expect(machine.lastError == nil && machine.retryDelay == 0.1)
    let again = machine.connectionFailed("gone")
    #expect(again.contains(.retry(afterSeconds: 0.1)))
    #expect(again.contains { if case .log(let line) = $0 { line.level == .warning } else { false } })
  }

  @Test func aNewerSchemaStopsSyncing() {
    var machine = Machine(server: "s", account: "a")
    _ = machine.start()
    _ = machine.connected()
    let actions = machine.migrated(version: 3, supported: 2)
    #expect(actions.first == .closeConnection)
    #expect(machine.phase == .incompatible)
    #expect(machine.lastError?.contains("version 3, newer than this tipsd understands (2)") == true)
    // Nothing brings it back: no retry, no statements.
    #expect(
      machine.connectionFailed("x") == [] && machine.retryDue() == [] && machine.kicked(outboxHasWork: true) == [])
  }

  @Test func stoppingIsFinal() {
    var (machine, _) = connectedMachine()
    #expect(machine.stop() == [.closeConnection])
    #expect(machine.phase == .stopped)
    #expect(machine.stop() == [] && machine.start() == [] && machine.retryDue() == [])
    #expect(machine.connectionFailed("late failure") == [] && machine.notified(outboxHasWork: true) == [])
  }
}
