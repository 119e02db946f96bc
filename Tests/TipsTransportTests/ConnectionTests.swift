import Glibc
import Testing
import TipsTransport

@Suite struct ConnectionTests {
  init() { ProcessSignals.ignoreSIGPIPE() }

  @Test func echoOverUnixSocket() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("echo")
    var reasons: [CloseReason] = []
    var pendingAtClose: [Int] = []
    _ = try startEchoServer(loop: loop, path: path, expectedClients: 1) { connection, reason in
      reasons.append(reason)
      pendingAtClose.append(connection.pendingWriteBytes)
    }
    let sent = payload(300_000)
    let received = Locked<[UInt8]?>(nil)
    let client = onNewThread {
      let fd = connectClient(path)
      guard fd >= 0 else { return }
      defer { close(fd) }
      writeAll(fd, sent)
      shutdown(fd, Int32(SHUT_WR))
      let (bytes, eof) = readToEnd(fd)
      received.update { $0 = eof ? bytes : nil }
    }
    run(loop)
    #expect(client.join())
    #expect(received.value?.count == sent.count)
    #expect(received.value.map { $0 == sent } == true)
    #expect(reasons == [.eof])
    #expect(pendingAtClose == [0])
    #expect(access(path, F_OK) != 0, "socket file removed by close()")
  }

  @Test func manyClients() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("many")
    let clients = 24
    var ids = Set<UInt64>()
    _ = try startEchoServer(loop: loop, path: path, expectedClients: clients) { connection, _ in
      ids.insert(connection.id)
    }
    let ok = Locked(0)
    var threads: [Spawned] = []
    for i in 0..<clients {
      threads.append(
        onNewThread {
          let fd = connectClient(path)
          guard fd >= 0 else { return }
          defer { close(fd) }
          let sent = payload(20_000 + i * 100, seed: i)
          writeAll(fd, sent)
          shutdown(fd, Int32(SHUT_WR))
          if readToEnd(fd) == (sent, true) { ok.update { $0 += 1 } }
        })
    }
    run(loop)
    #expect(threads.allSatisfy { $0.join() })
    #expect(ok.value == clients)
    #expect(ids.count == clients)
  }

  @Test func abruptDisconnectWithLargePendingWrites() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("abrupt")
    let server = try UnixSocketServer(loop: loop, path: path)
    var queued = 0
    var result: (reason: CloseReason, pending: Int)?
    var writesAfterClose: Bool?
    server.onConnection = { connection in
      let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
      for _ in 0..<128 { connection.write(chunk) }  // 8 MiB
      queued = connection.pendingWriteBytes
      connection.onClose = { reason in
        result = (reason, connection.pendingWriteBytes)
        writesAfterClose = connection.write(chunk)
        server.close()
      }
      connection.startReading()
    }
    let client = onNewThread {
      let fd = connectClient(path)
      guard fd >= 0 else { return }
      var byte: UInt8 = 0
      _ = read(fd, &byte, 1)  // the server has started writing
      close(fd)  // vanish with megabytes unread
    }
    run(loop)
    #expect(client.join())
    #expect(queued > 4 * 1024 * 1024)
    #expect(result?.pending == 0)
    #expect(writesAfterClose == false)
    switch result?.reason {
    case .eof?, .error?: break
    default: Issue.record("unexpected close reason \(String(describing: result?.reason))")
    }
  }

  @Test func localCloseFromInsideOnDataCancelsPendingWrites() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("cancel")
    let server = try UnixSocketServer(loop: loop, path: path)
    var result: (reason: CloseReason, pending: Int)?
    var pendingBeforeClose = 0
    server.onConnection = { connection in
      for _ in 0..<64 { connection.write([UInt8](repeating: 1, count: 128 * 1024)) }
      connection.onData = { _ in
        pendingBeforeClose = connection.pendingWriteBytes
        connection.close(after: false, reason: "test")
        connection.close(after: true)  // idempotent
        #expect(connection.isClosed)
      }
      connection.onClose = { reason in
        result = (reason, connection.pendingWriteBytes)
        server.close()
      }
      connection.startReading()
    }
    let clientGot = Locked<(count: Int, eof: Bool)?>(nil)
    let client = onNewThread {
      let fd = connectClient(path)
      guard fd >= 0 else { return }
      defer { close(fd) }
      writeAll(fd, [0x78])
      let (bytes, eof) = readToEnd(fd)
      clientGot.update { $0 = (bytes.count, eof) }
    }
    run(loop)
    #expect(client.join())
    #expect(pendingBeforeClose > 0)
    #expect(result?.reason == .local("test"))
    #expect(result?.pending == 0)
    #expect(clientGot.value?.eof == true)
    #expect((clientGot.value?.count ?? .max) < 8 * 1024 * 1024)
  }

  @Test func flushingCloseDeliversEverything() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("flush")
    let server = try UnixSocketServer(loop: loop, path: path)
    let total = 2 * 1024 * 1024
    var reason: CloseReason?
    server.onConnection = { connection in
      connection.write(payload(total))
      connection.close(after: true, reason: "done")
      connection.onClose = {
        reason = $0; server.close()
      }
    }
    let got = Locked<(count: Int, eof: Bool)?>(nil)
    let client = onNewThread {
      let fd = connectClient(path)
      guard fd >= 0 else { return }
      defer { close(fd) }
      let (bytes, eof) = readToEnd(fd)
      got.update { $0 = (bytes.count, eof) }
    }
    run(loop)
    #expect(client.join())
    #expect(got.value?.count == total)
    #expect(got.value?.eof == true)
    #expect(reason == .local("done"))
  }

  @Test func peerCredentialsReportOurOwnProcess() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("cred")
    let server = try UnixSocketServer(loop: loop, path: path)
    var credentials: PeerCredentials?
    server.onConnection = { connection in
      credentials = connection.peerCredentials
      connection.close(after: false)
      server.close()
    }
    let client = onNewThread {
      let fd = connectClient(path)
      guard fd >= 0 else { return }
      _ = readToEnd(fd)
      close(fd)
    }
    run(loop)
    #expect(client.join())
    #expect(credentials?.pid == getpid())
    #expect(credentials?.uid == getuid())
    #expect(credentials?.gid == getgid())
  }

  @Test func pipesEndOfInputFlushesRepliesOfTheLastTurn() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    var input: [Int32] = [0, 0], output: [Int32] = [0, 0]
    #expect(pipe(&input) == 0 && pipe(&output) == 0)
    writeAll(input[1], Array("hello\nworld\n".utf8))
    close(input[1])
    let connection = try StdioTransport.open(loop: loop, inputFD: input[0], outputFD: output[1])
    #expect(connection.peerCredentials == nil)
    var buffered: [UInt8] = []
    var reason: CloseReason?
    connection.onData = { buffered.append(contentsOf: $0) }
    connection.onClose = { reason = $0 }
    // Replies are produced only at the end of the turn, like the server's group commit.
    loop.afterEachTurn {
      guard !buffered.isEmpty else { return }
      connection.write(buffered.map { $0 >= 0x61 && $0 <= 0x7a ? $0 - 0x20 : $0 })
      buffered = []
    }
    connection.startReading()
    run(loop)
    #expect(reason == .eof)
    let (bytes, eof) = readToEnd(output[0])
    close(output[0])
    #expect(String(decoding: bytes, as: UTF8.self) == "HELLO\nWORLD\n")
    #expect(eof)
  }

  @Test func regularFileIsRefusedAsStdio() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("file")
    let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
    defer { close(fd); unlink(path) }
    #expect {
      _ = try StdioTransport.open(loop: loop, inputFD: fd, outputFD: fd)
    } throws: { error in
      (error as? TransportError)?.message.contains("regular file") == true
    }
  }

  @Test func afterEachTurnRunsAfterTheReadsOfATurn() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    var log: [String] = []
    var connections: [UVStream] = []
    var peers: [Int32] = []
    for name in ["a", "b"] {
      var pair: [Int32] = [0, 0]
      #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
      let connection = try StdioTransport.open(loop: loop, inputFD: pair[0], outputFD: pair[0])
      connection.onData = { log.append("read \(name) \($0.count)") }
      connection.startReading()
      connections.append(connection)
      peers.append(pair[1])
      writeAll(pair[1], Array(name.utf8))
    }
    defer { peers.forEach { close($0) } }
    loop.afterEachTurn {
      log.append("turn")
      if log.filter({ $0.hasPrefix("read") }).count == 2 {
        connections.forEach { $0.close(after: false) }
      }
    }
    run(loop)
    #expect(Set(log.prefix(2)) == ["read a 1", "read b 1"])
    #expect(log.dropFirst(2).first == "turn")
  }
}
