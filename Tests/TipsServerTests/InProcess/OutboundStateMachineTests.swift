import Testing
import TipsJSON
import TipsProtocol

@testable import TipsServer

/// The per-connection output state machine on its own: events in, actions out, no I/O.
@Suite struct OutboundStateMachineTests {
  typealias Machine = OutboundStateMachine

  static func reply(_ id: Int64, durable: Bool = false, size: Int = 10) -> Machine.Item {
    let bytes = Array("{\"id\":\(id),\"r\":\"\(String(repeating: "x", count: size))\"}".utf8)
    return .reply(StagedReply(parts: [.init(id: .int(id), bytes: bytes, durable: durable)], isBatch: false))
  }

  static func shouldDisplay(_ subscription: String, _ tip: String, _ value: Bool) -> Machine.Item {
    let note = ShouldDisplayChangedNotification(
      subscription: subscription, id: tip, shouldDisplay: value, status: StatusInfo(value ? .available : .pending),
      tip: TipContent(nil, id: tip, locale: nil))
    return .notification(StagedNotification(notification: note, shouldDisplay: (tip, value)))
  }

  static func action(_ subscription: String) -> Machine.Item {
    let note = ActionPerformedNotification(
      subscription: subscription, tipID: "t", actions: [ActionInfo(id: "a", title: "A", index: 0)])
    return .notification(StagedNotification(notification: note, shouldDisplay: nil))
  }

  static func failure(_ id: RequestID?) -> [UInt8] { Array("failed \(id.map { "\($0)" } ?? "null")".utf8) }

  /// Runs every action with the transport holding `pending` bytes; returns them.
  static func drain(_ machine: inout Machine, pending: Int = 0) -> [Machine.Action] {
    var actions: [Machine.Action] = []
    while let action = machine.nextAction(transportPending: pending) { actions.append(action) }
    return actions
  }

  static func written(_ actions: [Machine.Action]) -> [JSONValue] {
    actions.compactMap { if case .write(let bytes) = $0 { try? JSONParser.parse(bytes) } else { nil } }
  }

  @Test func nothingLeavesBeforeTheCommit() {
    var machine = Machine(highWater: 1_000, queueLimit: 10_000)
    machine.stage(Self.reply(1))
    #expect(Self.drain(&machine).isEmpty)
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.written(Self.drain(&machine)).map { $0["id"] } == [1])
    #expect(!machine.hasWork)
  }

  @Test func aFailedCommitReplacesOnlyDurableReplies() {
    var machine = Machine(highWater: 1_000, queueLimit: 10_000)
    machine.stage(Self.reply(1, durable: true))
    machine.stage(Self.reply(2, durable: false))
    machine.stage(
      .reply(
        StagedReply(
          parts: [
            .init(id: 3, bytes: Array("{\"id\":3}".utf8), durable: true),
            .init(id: 4, bytes: Array("{\"id\":4}".utf8), durable: false),
          ],
          isBatch: true)))
    machine.commitFinished(success: false, failure: Self.failure)
    let texts = Self.drain(&machine).compactMap {
      if case .write(let b) = $0 { String(decoding: b, as: UTF8.self) } else { nil }
    }
    #expect(texts == ["failed 1", #"{"id":2,"r":"xxxxxxxxxx"}"#, #"[failed 3,{"id":4}]"#])
  }

  @Test func seqNumbersWhatIsDeliveredPerSubscription() {
    var machine = Machine(highWater: 1_000_000, queueLimit: 10_000_000)
    for value in [true, false, true] { machine.stage(Self.shouldDisplay("sub-1", "t", value)) }
    machine.stage(Self.action("sub-2"))
    machine.commitFinished(success: true, failure: Self.failure)
    let notes = Self.written(Self.drain(&machine))
    #expect(notes.map { $0["params"]?["seq"] } == [1, 2, 3, 1])
    #expect(notes.map { $0["params"]?["subscription"] } == ["sub-1", "sub-1", "sub-1", "sub-2"])
  }

  /// Behind back-pressure, a newer value for the same subscription and tip replaces the waiting one; a value equal
  /// to what the client last received removes it; seq stays gap-free.
  @Test func waitingNotificationsCoalesce() {
    var machine = Machine(highWater: 100, queueLimit: 1_000_000)
    machine.stage(Self.shouldDisplay("sub-1", "t", true))
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.written(Self.drain(&machine)).count == 1)  // delivered: the client has true
    // The transport is now full: everything waits.
    for value in [false, true, false] { machine.stage(Self.shouldDisplay("sub-1", "t", value)) }
    machine.stage(Self.shouldDisplay("sub-1", "u", true))
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.drain(&machine, pending: 500).isEmpty)
    var delivered = Self.written(Self.drain(&machine))
    #expect(delivered.map { $0["params"]?["id"] } == ["t", "u"])
    #expect(delivered.map { $0["params"]?["shouldDisplay"] } == [false, true])
    #expect(delivered.map { $0["params"]?["seq"] } == [2, 3])
    // Now true then false again while full: false is what the client has, so nothing is sent.
    for value in [true, false] { machine.stage(Self.shouldDisplay("sub-1", "t", value)) }
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.drain(&machine, pending: 500).isEmpty)
    delivered = Self.written(Self.drain(&machine))
    #expect(delivered.isEmpty)
  }

  @Test func aValueGivenInTheObserveResultIsNotRepeated() {
    var machine = Machine(highWater: 100, queueLimit: 1_000_000)
    machine.given(subscription: "sub-1", tipID: "t", shouldDisplay: false)
    machine.stage(Self.shouldDisplay("sub-1", "t", true))
    machine.stage(Self.shouldDisplay("sub-1", "t", false))
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.drain(&machine, pending: 500).isEmpty)
    #expect(Self.written(Self.drain(&machine)).isEmpty)
  }

  @Test func aQueueOverTheLimitDisconnects() {
    var machine = Machine(highWater: 10, queueLimit: 600)
    for _ in 0..<3 { machine.stage(Self.action("sub-1")) }
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.drain(&machine, pending: 100) == [.disconnect(queuedBytes: 768)])
    machine.stage(Self.action("sub-1"))
    #expect(Self.drain(&machine).isEmpty, "nothing more after a disconnect")
  }

  @Test func inputPausesWhileOwedMoreThanTheHighWaterAndResumesWhenDrained() {
    var machine = Machine(highWater: 100, queueLimit: 1_000_000)
    #expect(machine.mustPauseInput(transportPending: 50) == (false, nil))
    #expect(machine.mustPauseInput(transportPending: 101) == (true, .pauseReading))
    #expect(machine.mustPauseInput(transportPending: 101) == (true, nil))
    #expect(Self.drain(&machine, pending: 101).isEmpty)
    #expect(Self.drain(&machine, pending: 0) == [.resumeReading])
    #expect(machine.mustPauseInput(transportPending: 0) == (false, nil))
  }

  @Test func closingWaitsForWhatIsOwed() {
    var machine = Machine(highWater: 100, queueLimit: 1_000_000)
    machine.stage(Self.reply(1))
    machine.beginClosing()
    machine.commitFinished(success: true, failure: Self.failure)
    let actions = Self.drain(&machine)
    #expect(actions.count == 2)
    #expect(actions.last == .close)
    #expect(!machine.hasWork)
  }

  @Test func anEndedSubscriptionsNotificationsAreDropped() {
    var machine = Machine(highWater: 100, queueLimit: 1_000_000)
    machine.stage(Self.action("sub-1"))
    machine.stage(Self.action("sub-2"))
    machine.commitFinished(success: true, failure: Self.failure)
    #expect(Self.drain(&machine, pending: 500).isEmpty)
    machine.stage(Self.action("sub-1"))
    machine.subscriptionEnded("sub-1")
    machine.commitFinished(success: true, failure: Self.failure)
    let delivered = Self.written(Self.drain(&machine))
    #expect(delivered.map { $0["params"]?["subscription"] } == ["sub-2"])
  }

  @Test func theBatchBoundCountsWhatIsOwed() {
    var machine = Machine(highWater: 100, queueLimit: 1_000)
    #expect(!machine.exceedsBound(adding: 1_000))
    machine.stage(Self.reply(1, size: 50))
    #expect(machine.exceedsBound(adding: 950))
  }
}
