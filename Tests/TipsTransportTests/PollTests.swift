import Glibc
import Testing
import TipsTransport

/// UVPoll: readiness of a descriptor someone else owns (libpq's socket), and name resolution off the loop.
@Suite struct PollTests {
  @Test func reportsReadableAndWritableThenCloses() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    var fds: [Int32] = [0, 0]
    #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    let poll = try loop.makePoll(fileDescriptor: fds[0])
    #expect(poll.fileDescriptor == fds[0])
    var seen: [PollEvents] = []
    poll.watch(.writable) { events in
      seen.append(events)
      // Writable at once; then watch for input, which the peer sends now.
      poll.watch(.readable) { events in
        seen.append(events)
        var byte: UInt8 = 0
        #expect(read(fds[0], &byte, 1) == 1 && byte == 42)
        poll.close()
      }
      var byte: UInt8 = 42
      #expect(write(fds[1], &byte, 1) == 1)
    }
    run(loop)
    #expect(seen == [.writable, .readable])
  }

  @Test func resolvesOffTheLoop() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    var answers: [String] = []
    loop.resolve(host: "localhost") { result in
      if case .success(let address) = result { answers.append(address) }
    }
    loop.resolve(host: "tipsd-test.invalid") { result in
      if case .failure(let error) = result { answers.append(error.message) }
    }
    run(loop)
    #expect(answers.count == 2)
    #expect(answers.contains { $0 == "127.0.0.1" || $0 == "::1" })
    #expect(answers.contains("cannot resolve tipsd-test.invalid"))
  }
}
