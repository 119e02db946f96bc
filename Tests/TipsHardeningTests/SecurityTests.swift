import Foundation
import Testing
import TipsCommands
import TipsJSON
import TipsServer
import TipsTestSupport

/// Runs a process to completion, returning its exit status and output (stdout + stderr). One still running after
/// `timeout` seconds (a daemon that should have refused to start) is terminated.
func run(_ executable: String, _ arguments: [String], timeout: Double = 20) throws -> (status: Int32, output: String) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  let pipe = Pipe()
  process.standardOutput = pipe
  process.standardError = pipe
  process.standardInput = FileHandle.nullDevice
  try process.run()
  // Read on another thread: reading to end of file here would wait for the process however long it runs.
  // (`@unchecked Sendable`: written by the reader thread before it signals `finished`, read after.)
  final class Output: @unchecked Sendable { var data = Data() }
  let output = Output()
  let reader = pipe.fileHandleForReading
  let finished = DispatchSemaphore(value: 0)
  Thread {
    output.data = reader.readDataToEndOfFile()
    finished.signal()
  }.start()
  let deadline = Date().addingTimeInterval(timeout)
  while process.isRunning && Date() < deadline { usleep(5_000) }
  if process.isRunning { process.terminate() }
  process.waitUntilExit()
  finished.wait()
  return (process.terminationStatus, String(decoding: output.data, as: UTF8.self))
}

func fileMode(_ path: String) -> mode_t? {
  var info = stat()
  return lstat(path, &info) == 0 ? info.st_mode : nil
}

extension Hardening {
  @Suite struct Security {
    @Test func socketIs0600InA0700DirectoryTipsdCreates() throws {
      let base = temporaryDirectory()
      defer { try? FileManager.default.removeItem(atPath: base) }
      let directory = "\(base)/run"
      let daemon = try Daemon([], directory: base, socketPath: "\(directory)/tipsd.sock")
      defer { daemon.stop(removeDirectory: false) }
      #expect(fileMode(directory).map { $0 & 0o7777 } == 0o700)
      #expect(fileMode(directory).map { $0 & S_IFMT } == S_IFDIR)
      #expect(fileMode("\(directory)/tipsd.sock").map { $0 & 0o7777 } == 0o600)
      #expect(fileMode("\(directory)/tipsd.sock").map { $0 & S_IFMT } == S_IFSOCK)
    }

    /// Needs root (to chown); a run that is not root reports it skipped, not passed.
    @Test(.enabled(if: getuid() == 0, "needs root to chown a directory to another user"))
    func aSocketDirectoryOwnedByAnotherUserIsRefused() throws {
      let base = temporaryDirectory()
      defer { try? FileManager.default.removeItem(atPath: base) }
      let directory = "\(base)/theirs"
      mkdir(directory, 0o755)
      chown(directory, 65534, 65534)
      let (status, output) = try run(
        tipsdBinary(), ["serve", "--socket", "\(directory)/tipsd.sock", "--datastore", ":memory:"])
      #expect(status != 0)
      #expect(output.contains("belongs to another user"), "\(output)")
    }

    @Test func peerUIDDecision() throws {
      var configuration = ServerConfiguration()
      #expect(configuration.allowsPeer(uid: 1000, ownUID: 1000))
      #expect(!configuration.allowsPeer(uid: 1001, ownUID: 1000))
      #expect(!configuration.allowsPeer(uid: 0, ownUID: 1000), "root is refused like any other uid")
      #expect(!configuration.allowsPeer(uid: nil, ownUID: 1000), "unreadable credentials fail closed")
      configuration.allowedPeerUIDs = [1001]
      #expect(configuration.allowsPeer(uid: 1001, ownUID: 1000))
      #expect(configuration.allowsPeer(uid: 1000, ownUID: 1000))
      #expect(!configuration.allowsPeer(uid: 1002, ownUID: 1000))
      let parsed = try ServeCommand(parsing: ["--allow-uid", "65534", "--allow-uid", "1001"], environment: [:])
      #expect(parsed.configuration.allowedPeerUIDs == [65534, 1001])
      for bad in ["-1", "abc", "4294967296", ""] {
        #expect(throws: UsageError.self) { try ServeCommand(parsing: ["--allow-uid", bad], environment: [:]) }
      }
      #expect(throws: UsageError.self) { try ServeCommand(parsing: ["--allow-uid"], environment: [:]) }
    }

    /// A client running as another uid (setpriv to nobody) reaches the socket (permissions opened for the test) and
    /// is refused by SO_PEERCRED; with `--allow-uid` it is served.
    /// Without root or setpriv it is reported as skipped; `peerUIDDecision` still tests the decision.
    @Test(
      .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
        "needs root and /usr/bin/setpriv to run a client as another uid"))
    func anotherUIDIsRefusedUnlessAllowed() throws {
      // The binary must be reachable by nobody: copy it somewhere world-readable.
      let binDirectory = temporaryDirectory()
      defer { try? FileManager.default.removeItem(atPath: binDirectory) }
      chmod(binDirectory, 0o755)
      let binary = "\(binDirectory)/tipsd"
      try FileManager.default.copyItem(atPath: tipsdBinary(), toPath: binary)
      chmod(binary, 0o755)
      let nobody = ["--reuid", "65534", "--regid", "65534", "--clear-groups", binary]
      for allowed in [false, true] {
        let daemon = try Daemon(allowed ? ["--allow-uid", "65534"] : [])
        defer { daemon.stop() }
        chmod(daemon.directory, 0o755)
        chmod(daemon.socketPath!, 0o666)
        let (status, output) = try run(
          "/usr/bin/setpriv", nobody + ["call", "--socket", daemon.socketPath!, "clock/now"])
        if allowed {
          #expect(status == 0, "\(output)")
          #expect(output.contains("\"now\""), "\(output)")
        } else {
          #expect(status != 0, "\(output)")
          #expect(!output.contains("\"now\""))
          #expect(
            waitUntil() {
              daemon.log.contains("refused a connection from another user") && daemon.log.contains("uid=65534")
            }, "\(daemon.log)")
        }
        // The owner is still served either way.
        let owner = try daemon.connect()
        try owner.initialize(name: "owner")
        owner.close()
      }
    }

    /// No method opens, creates or reads a path taken from its params: path-like strings in every param of every
    /// method (and in extra params) leave the file system alone and never bring file contents back.
    @Test func noMethodTouchesAPathChosenByTheClient() throws {
      let fixture = try Fixture(["--clock", "virtual"])
      let canary = temporaryDirectory()
      defer { try? FileManager.default.removeItem(atPath: canary) }
      let secretFile = "\(canary)/secret.txt"
      try "CANARY-CONTENT-4711".write(toFile: secretFile, atomically: true, encoding: .utf8)
      let client = try fixture.daemon.connect()
      let methods = try client.initialize(name: "paths").methods
      let paths: [JSONValue] = [
        .string(secretFile), .string("\(canary)/new.sqlite"), .string("../../../../..\(canary)/up"),
        .string("file://\(secretFile)"),
        "/etc/passwd", "/proc/self/environ", .string("\(canary)/new-catalog.json"),
      ]
      var replies: [String] = []
      for method in methods where !["shutdown", "exit", "datastore/reset"].contains(method) {
        for path in paths {
          let params: JSONValue = [
            "id": path, "ids": [path], "path": path, "file": path, "datastore": path, "catalog": path,
            "subscription": path,
            "tips": [["id": path, "title": path, "image": path, "rules": []]], "tipIds": [path], "groups": [path],
            "parameters": [["id": path, "default": path]], "value": path, "actionId": path, "info": ["file": path],
            "displayFrequency": path, "reason": path, "protocolVersion": "1.0", "clientInfo": ["name": path],
          ]
          replies.append(try client.call(method, params).jsonString)
        }
      }
      // datastore/reset takes no params; extra ones must not redirect it.
      replies.append(
        try client.call(
          "datastore/reset",
          ["path": .string("\(canary)/reset.sqlite"), "datastore": .string("\(canary)/reset.sqlite")]
        ).jsonString)
      let created = try FileManager.default.contentsOfDirectory(atPath: canary)
      #expect(created == ["secret.txt"], "files appeared: \(created)")
      let all = replies.joined(separator: "\n")
      #expect(!all.contains("CANARY-CONTENT"))
      #expect(!all.contains("root:x:0:0"))
      #expect(fixture.daemon.process.isRunning)
      client.close()
    }

    /// `--datastore` and `--catalog` are reported at startup resolved: absolute, symlinks and `..` resolved.
    @Test func startupReportsResolvedPaths() throws {
      let base = temporaryDirectory()
      defer { try? FileManager.default.removeItem(atPath: base) }
      let real = URL(fileURLWithPath: base).resolvingSymlinksInPath().path + "/real"
      mkdir(real, 0o700)
      symlink(real, "\(base)/link")
      try "{\"tips\": []}".write(toFile: "\(real)/catalog.json", atomically: true, encoding: .utf8)
      let daemon = try Daemon(
        ["--catalog", "link/../link/catalog.json"], directory: base, datastore: "link/state.sqlite",
        currentDirectory: base)
      defer { daemon.stop() }
      let line = daemon.log.split(separator: "\n").first { $0.contains("starting tipsd") }.map(String.init) ?? ""
      #expect(line.contains("datastore=\(real)/state.sqlite"), "\(line)")
      #expect(line.contains("catalog=\(real)/catalog.json"), "\(line)")
      #expect(daemon.log.contains("datastore loaded"))
    }

    /// A catalog error names the file and the JSON path, never the file's string values.
    @Test func catalogErrorsDoNotEchoTheirContents() throws {
      let base = temporaryDirectory()
      defer { try? FileManager.default.removeItem(atPath: base) }
      let secret = "sk_live_SECRET_9f8e7d6c"
      let catalogs: [(String, String)] = [
        (
          "{\"tips\":[{\"id\":\"a\",\"title\":\"A\",\"rules\":[{\"event\":\"e\",\"count\":{\"gte\":\"\(secret)\"}}]}]}",
          "tips[0].rules[0].count.gte"
        ),
        (
          "{\"tips\":[{\"id\":\"a\",\"title\":\"A\",\"rules\":[{\"event\":\"e\",\"count\":{\"gte\":{\"token\":\"\(secret)\"}}}]}]}",
          "tips[0].rules[0].count.gte"
        ),
        (
          "{\"tips\":[{\"id\":\"a\",\"title\":\"A\",\"rules\":[{\"event\":\"e\",\"within\":{\"days\":[\"\(secret)\"]},\"count\":{\"gte\":1}}]}]}",
          "tips[0].rules[0].within.days"
        ),
        ("{\"parameters\":[{\"id\":\"p\",\"default\":{\"k\":\"\(secret)\"}}]}", "parameters[0].default"),
        (
          "{\"tips\":[{\"id\":\"a\",\"title\":\"\(secret)\",\"rules\":[{\"parameter\":\"p\",\"eq\":[\"\(secret)\"]}]}]}",
          "tips[0]"
        ),
        ("{\"tips\":[{\"id\":\"a\",\"title\":\"\(secret)\" oops}]}", "invalid JSON"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\n\(secret)\n-----END OPENSSH PRIVATE KEY-----\n", "invalid JSON"),
      ]
      for (index, (text, expected)) in catalogs.enumerated() {
        let path = "\(base)/catalog-\(index).json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let (status, output) = try run(
          tipsdBinary(), ["serve", "--stdio", "--datastore", ":memory:", "--catalog", path])
        #expect(status != 0, "catalog \(index) was accepted")
        #expect(output.contains(path) && output.contains(expected), "catalog \(index): \(output)")
        #expect(!output.contains("SECRET"), "catalog \(index) leaked: \(output)")
      }
    }

    /// Without --listen there is no TCP or UDP endpoint: no socket the daemon holds listens on TCP or is bound to UDP.
    /// (Sockets it inherited from this test process — another test's client opened while Foundation spawned the
    /// daemon — are the test's, not the daemon's: a socket also open here is left out.)
    @Test func onlyUnixSocketsByDefault() throws {
      let fixture = try Fixture()
      func socketInodes(_ pid: String) -> Set<String> {
        let directory = "/proc/\(pid)/fd"
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Set(
          fds.compactMap { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(fd)"),
              target.hasPrefix("socket:[")
            else { return nil }
            return String(target.dropFirst(8).dropLast())
          })
      }
      /// Inodes of TCP sockets in LISTEN state and of every UDP socket in the daemon's network namespace.
      func endpoints() -> Set<String> {
        var found: Set<String> = []
        for table in ["tcp", "tcp6", "udp", "udp6"] {
          let text = (try? String(contentsOfFile: "/proc/\(fixture.pid)/net/\(table)", encoding: .utf8)) ?? ""
          for line in text.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ")
            guard columns.count > 9 else { continue }
            if table.hasPrefix("udp") || columns[3] == "0A" { found.insert(String(columns[9])) }
          }
        }
        return found
      }
      let own = socketInodes(String(fixture.pid)).subtracting(socketInodes("self"))
      let listening = own.intersection(endpoints())
      #expect(listening.isEmpty, "the daemon listens on TCP or UDP: sockets \(listening.sorted())")
      #expect(own.count >= 2)  // the listener and the healthy client
      // The check can fail: a daemon started with --listen has a TCP endpoint among its own sockets.
      let listener = try Fixture(["--listen", "127.0.0.1:0"])
      let tcp = socketInodes(String(listener.pid)).subtracting(socketInodes("self")).intersection(endpoints())
      #expect(!tcp.isEmpty, "--listen's TCP endpoint was not found")
    }
  }
}
