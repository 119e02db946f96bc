import Foundation
import Glibc
import Testing
import TipsTransport

@Suite struct SocketHygieneTests {
  private func expectRefusal(
    _ path: String, containing text: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let loop = try UVLoop()
    defer { loop.close() }
    #expect(sourceLocation: sourceLocation) {
      _ = try UnixSocketServer(loop: loop, path: path)
    } throws: { error in
      guard let error = error as? TransportError else { return false }
      return error.message.contains(text) && error.message.contains(path)
    }
  }

  @Test func socketIsCreatedWithMode0600() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("mode")
    let server = try UnixSocketServer(loop: loop, path: path)
    var info = stat()
    #expect(lstat(path, &info) == 0)
    #expect(info.st_mode & S_IFMT == S_IFSOCK)
    #expect(info.st_mode & 0o7777 == 0o600)
    server.close()
    #expect(access(path, F_OK) != 0)
  }

  @Test func staleSocketIsReplaced() throws {
    let path = temporarySocketPath("stale")
    // Leave a bound-but-dead socket file behind, as a crashed server would.
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = makeUnixAddress(path)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    #expect(bound == 0)
    close(fd)
    #expect(access(path, F_OK) == 0)

    let loop = try UVLoop()
    defer { loop.close() }
    let server = try UnixSocketServer(loop: loop, path: path)
    var accepted = 0
    server.onConnection = { connection in
      accepted += 1
      connection.close(after: false)
      server.close()
    }
    let client = onNewThread {
      let client = connectClient(path)
      if client >= 0 { _ = readToEnd(client); close(client) }
    }
    run(loop)
    #expect(client.join())
    #expect(accepted == 1)
  }

  @Test func liveSocketIsRefused() throws {
    let loop = try UVLoop()
    defer { loop.close() }
    let path = temporarySocketPath("live")
    let server = try UnixSocketServer(loop: loop, path: path)
    try expectRefusal(path, containing: "another tipsd is serving")
    var info = stat()
    #expect(lstat(path, &info) == 0, "the live socket is left alone")
    server.close()
  }

  @Test func clientConnectReportsErrnoAndConnectsToAListener() throws {
    let path = temporarySocketPath("client")
    #expect(UnixSocketClient.connect(path) == -ENOENT)
    #expect(
      UnixSocketClient.connect(String(repeating: "x", count: UnixSocketServer.maximumPathLength + 1)) == -ENAMETOOLONG)
    let loop = try UVLoop()
    defer { loop.close() }
    let server = try UnixSocketServer(loop: loop, path: path)
    let fd = UnixSocketClient.connect(path)
    #expect(fd >= 0)
    #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
    close(fd)
    server.close()
  }

  /// Issue #17: every server of one process used to bind the same staging name (`.tipsd-<pid>.sock.tmp`), so two
  /// servers created at once in one directory failed with EADDRINUSE. Eight threads, each with its own loop, now
  /// create 25 servers each in one shared directory, all at once.
  @Test func serversCreatedConcurrentlyInOneDirectoryAllBind() throws {
    let directory = temporarySocketPath("dir")
    #expect(mkdir(directory, 0o700) == 0)
    defer { rmdir(directory) }
    let threads = 8
    let perThread = 25
    let failures = Locked<[String]>([])
    let start = DispatchSemaphore(value: 0)
    var spawned: [Spawned] = []
    for t in 0..<threads {
      spawned.append(
        onNewThread {
          start.wait()
          do {
            let loop = try UVLoop()
            defer { loop.close() }
            for k in 0..<perThread {
              let path = "\(directory)/s-\(t)-\(k).sock"
              do {
                let server = try UnixSocketServer(loop: loop, path: path)
                server.close()
              } catch {
                failures.update { $0.append("\(error)") }
              }
            }
          } catch {
            failures.update { $0.append("\(error)") }
          }
        })
    }
    for _ in 0..<threads { start.signal() }
    for thread in spawned { #expect(thread.join()) }
    #expect(failures.value.isEmpty, "\(failures.value.prefix(3))")
    // Nothing is left behind: no socket (closed servers unlink theirs) and no staging file.
    let left = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? ["?"]
    #expect(left.isEmpty, "\(left)")
  }

  /// Two servers of one loop in one directory (a daemon with two listeners) bind side by side.
  @Test func twoServersOfOneLoopShareADirectory() throws {
    let directory = temporarySocketPath("two")
    #expect(mkdir(directory, 0o700) == 0)
    defer { rmdir(directory) }
    let loop = try UVLoop()
    defer { loop.close() }
    let first = try UnixSocketServer(loop: loop, path: "\(directory)/a.sock")
    let second = try UnixSocketServer(loop: loop, path: "\(directory)/b.sock")
    let fd = UnixSocketClient.connect("\(directory)/b.sock")
    #expect(fd >= 0)
    if fd >= 0 { close(fd) }
    first.close()
    second.close()
  }

  @Test func symlinkIsRefused() throws {
    let target = temporarySocketPath("target")
    let path = temporarySocketPath("link")
    #expect(symlink(target, path) == 0)
    defer { unlink(path) }
    try expectRefusal(path, containing: "is a symbolic link")
    var info = stat()
    #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
  }

  @Test func regularFileIsRefused() throws {
    let path = temporarySocketPath("regular")
    let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
    #expect(fd >= 0)
    close(fd)
    defer { unlink(path) }
    try expectRefusal(path, containing: "exists and is not a socket; refusing to replace it")
    #expect(access(path, F_OK) == 0)
  }

  @Test func overlongPathIsRefused() throws {
    let path = "/tmp/" + String(repeating: "x", count: UnixSocketServer.maximumPathLength)
    try expectRefusal(path, containing: "bytes long")
  }

  @Test func missingDirectoryIsReported() throws {
    let path = temporarySocketPath("dir") + "/nested/tipsd.sock"
    try expectRefusal(path, containing: "exist?")
  }
}
