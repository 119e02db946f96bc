import Testing
import TipsJSON
import TipsProtocol

@testable import TipsServer

/// Replies staged straight into one newline-framed buffer (``OutboundStateMachine/stageDirect(_:id:durable:)``): the
/// same output, order and failure replacement as replies staged as items.
@Suite struct OutboundDirectTests {
  typealias Machine = OutboundStateMachine

  static func message(_ id: Int64) -> [UInt8] { Array("{\"id\":\(id)}".utf8) }
  static func failure(_ id: RequestID?) -> [UInt8] { Array("failed \(id.map { "\($0)" } ?? "null")".utf8) }

  static func drain(_ machine: inout Machine, pending: Int = 0) -> [Machine.Action] {
    var actions: [Machine.Action] = []
    while let action = machine.nextAction(transportPending: pending) { actions.append(action) }
    return actions
  }

  /// What the client reads, newline-framed, as the server's flush would frame it.
  static func text(_ actions: [Machine.Action]) -> String {
    var out: [UInt8] = []
    for action in actions {
      switch action {
      case .write(let bytes): out += bytes + [0x0A]
      case .writeMessages(let bytes, _): out += bytes
      default: continue
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  @Test func directRepliesLeaveTogetherAfterTheCommit() {
    var machine = Machine(highWater: 1_000, queueLimit: 10_000)
    for id in 1...3 { machine.stageDirect(Self.message(Int64(id)), id: .int(Int64(id)), durable: true) }
    #expect(machine.stagedBytes == 3 * (16 + 8))
    #expect(Self.drain(&machine).isEmpty)
    machine.commitFinished(success: true, failure: Self.failure)
    let actions = Self.drain(&machine)
    #expect(actions.count == 1)
    #expect(Self.text(actions) == "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n")
    #expect(!machine.hasWork)
  }

  @Test func aFailedCommitReplacesTheDurableDirectReplies() {
    var machine = Machine(highWater: 1_000, queueLimit: 10_000)
    machine.stageDirect(Self.message(1), id: .int(1), durable: true)
    machine.stageDirect(Self.message(2), id: .int(2), durable: false)
    machine.commitFinished(success: false, failure: Self.failure)
    #expect(Self.text(Self.drain(&machine)) == "failed 1\n{\"id\":2}\n")
  }

  @Test func somethingStagedAfterDirectRepliesKeepsTheOrder() {
    var machine = Machine(highWater: 1_000, queueLimit: 10_000)
    machine.stageDirect(Self.message(1), id: .int(1), durable: true)
    machine.stage(.single(.init(id: .int(2), bytes: Self.message(2), durable: false)))
    machine.stageDirect(Self.message(3), id: .int(3), durable: true)
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.text(Self.drain(&machine)) == "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n")
  }

  /// A transport near its high water takes the replies one by one, as items; the rest wait and leave in order.
  @Test func backPressureTurnsDirectRepliesIntoItems() {
    var machine = Machine(highWater: 20, queueLimit: 10_000)
    for id in 1...3 { machine.stageDirect(Self.message(Int64(id)), id: .int(Int64(id)), durable: false) }
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.drain(&machine, pending: 30).isEmpty)
    #expect(machine.hasWork)
    #expect(Self.text(Self.drain(&machine, pending: 0)) == "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n")
  }

  @Test func closingWaitsForDirectReplies() {
    var machine = Machine(highWater: 1_000, queueLimit: 10_000)
    machine.stageDirect(Self.message(1), id: .int(1), durable: true)
    machine.beginClosing()
    #expect(Self.drain(&machine).isEmpty)
    machine.commitFinished(success: true, failure: Self.failure)
    let actions = Self.drain(&machine)
    #expect(Self.text(actions) == "{\"id\":1}\n")
    #expect(actions.last == .close)
  }
}
