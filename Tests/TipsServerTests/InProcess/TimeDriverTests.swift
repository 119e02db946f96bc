import Testing
import TipsEngine
import TipsJSON
import TipsLogging
import TipsTestSupport

@testable import TipsServer

/// The system-clock driver of time-driven changes (`TimeDriver`).
@Suite struct TimeDriverTests {
  /// libuv's timers count from the loop's cached clock and the engine reads the wall clock, so a timer can come a
  /// little before the engine's instant. The driver must then arm itself again: after a timer callback with nothing
  /// to write or send, no end of turn is requested, and with no timer armed the real loop would sleep until the next
  /// client byte (a window expiring "never" on a busy machine).
  @Test func aTimerThatComesEarlyIsArmedAgain() throws {
    let loop = EmbeddedEventLoop()
    let clock = VirtualClock(now: 1_000)
    let engine = Engine(clock: clock)
    _ = try engine.register([
      try TipDefinition(
        json: [
          "id": "brief", "title": "B", "rules": [["event": "tap", "within": ["minutes": 1], "count": ["gte": 1]]],
        ],
        path: "tip")
    ])
    _ = try engine.donate("tap")
    #expect(engine.state(of: "brief")?.shouldDisplay == true)
    var passed: [Mutation] = []
    let driver = TimeDriver(timer: loop.makeTimer(), engine: engine, logger: Logger(level: .error)) {
      passed.append($0)
    }
    driver.reschedule()

    // The loop's clock reaches the timer's deadline while the engine's still lags 100 ms behind the window's end.
    clock.set(1_059.9)
    loop.advance(by: 60_100)
    #expect(engine.state(of: "brief")?.shouldDisplay == true)
    // The engine's clock catches up: the driver's own re-armed timer applies the change, with no end of turn.
    clock.set(1_060.2)
    loop.advance(by: 500)
    #expect(passed.contains { !$0.changes.isEmpty })
    #expect(engine.state(of: "brief")?.shouldDisplay == false)
  }
}
