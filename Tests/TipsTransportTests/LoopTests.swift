import Foundation
import Glibc
import Testing
import TipsTransport

@Suite struct LoopTests {
  @Test func timersFireInDeadlineOrder() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let start = loop.now
    var fired: [UInt64] = []
    for delay: UInt64 in [30, 10, 0, 20] {
      let timer = loop.makeTimer()
      timer.start(afterMilliseconds: delay) {
        fired.append(delay)
        timer.close()
      }
    }
    var ticks = 0
    let repeating = loop.makeTimer()
    repeating.start(afterMilliseconds: 1, repeatEvery: 2) {
      ticks += 1
      if ticks == 3 { repeating.close() }
    }
    let cancelled = loop.makeTimer() as! UVTimer
    cancelled.start(afterMilliseconds: 5) { fired.append(999) }
    cancelled.stop()
    #expect(!cancelled.isActive)
    run(loop)
    #expect(fired == [0, 10, 20, 30])
    #expect(ticks == 3)
    #expect(loop.now - start >= 30)
    cancelled.close()
  }

  @Test func requestedEndOfTurnRunsWithoutIO() throws {
    // A timer callback runs before the poll phase; requestEndOfTurn keeps the poll from blocking, so the
    // afterEachTurn handlers run in the same iteration although a far timer keeps the loop alive.
    let loop = try UVLoop()
    defer { loop.close() }
    var turnsAfterRequest = 0
    var requested = false
    loop.afterEachTurn {
      if requested {
        turnsAfterRequest += 1
        loop.stop()
      }
    }
    let far = loop.makeTimer()
    far.start(afterMilliseconds: 60_000) {}
    let near = loop.makeTimer()
    near.start(afterMilliseconds: 1) {
      requested = true
      loop.requestEndOfTurn()
    }
    run(loop)
    #expect(turnsAfterRequest == 1)
    far.close()
    near.close()
  }

  @Test func stopEndsRunAndRunCanResume() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let timer = loop.makeTimer()
    var count = 0
    timer.start(afterMilliseconds: 1, repeatEvery: 1) {
      count += 1
      loop.stop()
    }
    loop.run()
    #expect(count == 1)
    loop.run()
    #expect(count == 2)
    timer.close()
    run(loop)
  }

  @Test func signalWatcher() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    var seen = 0
    var watcher: SignalWatcher?
    watcher = try loop.onSignal(SIGUSR2) {
      seen += 1
      watcher?.close()
    }
    kill(getpid(), SIGUSR2)
    run(loop)
    #expect(seen == 1)
  }

  @Test func closeReleasesEverythingStillOpen() throws {
    let loop = try UVLoop()
    let path = temporarySocketPath("close-all")
    let server = try UnixSocketServer(loop: loop, path: path)
    let timer = loop.makeTimer() as! UVTimer
    timer.start(afterMilliseconds: 60_000) {}
    let signal = try loop.onSignal(SIGUSR1) {}
    loop.afterEachTurn {}
    var pair: [Int32] = [0, 0]
    #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
    defer { close(pair[1]) }
    let connection = try StdioTransport.open(loop: loop, inputFD: pair[0], outputFD: pair[0])
    var reason: CloseReason?
    connection.onClose = { reason = $0 }
    connection.write(Array(repeating: 7, count: 4 * 1024 * 1024))
    connection.startReading()
    loop.close()
    #expect(loop.isClosed)
    #expect(reason == .local("event loop closed"))
    #expect(connection.pendingWriteBytes == 0)
    #expect(server.isClosed && timer.isClosed && signal.isClosed)
    #expect(access(path, F_OK) != 0)
  }

  @Test func errorDescriptions() {
    let error = UVError(code: -EPIPE, operation: "write")
    #expect(error.name == "EPIPE")
    #expect(error.isPeerGone)
    #expect(error.description.contains("write"))
    #expect(error.description.contains("broken pipe"))
    let wrapped = TransportError("cannot bind /x", cause: error)
    #expect(wrapped.description.contains("cannot bind /x"))
    #expect(wrapped.description.contains("EPIPE"))
  }
}
