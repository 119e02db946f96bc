import Foundation

/// A private PostgreSQL server for one test: `initdb` into a fresh temporary directory, `pg_ctl start` listening only
/// on a Unix socket in that directory (no TCP port, so parallel tests and a system PostgreSQL never collide), stopped
/// and removed by ``destroy()`` (or at deinit). No system service is touched.
///
/// PostgreSQL refuses to run as root, and CI runs as root: then every PostgreSQL program runs as the `postgres` user
/// (`runuser -u postgres --`, Debian's package creates it), which owns the directory. The server runs with
/// `fsync=off`: a test database need not survive power loss, and a busy machine's disk stays out of the timings.
public final class PostgresServer: @unchecked Sendable {
  /// The temporary directory: `data/` (the cluster), the server's log and its socket.
  public let directory: String
  private let binDirectory: String
  private let asPostgresUser: Bool
  public private(set) var isRunning = false

  /// Where clients connect: the socket directory, the `postgres` database and superuser (trust authentication).
  public var url: String { "postgresql:///postgres?host=\(directory)&port=\(port)&user=postgres" }

  /// The port (names the socket file too).
  public var port: Int { tcpPort ?? 5432 }

  /// The same server under a URL that names a password, to check that it is never logged (trust authentication
  /// ignores it).
  public func url(password: String) -> String {
    "postgresql://postgres:\(password)@/postgres?host=\(directory)&port=\(port)"
  }

  /// A URL where no server listens (a device that stays offline).
  public static let unreachableURL = "postgresql:///postgres?host=/nonexistent-tipsd-test&port=5432&user=postgres"

  /// Also listening on TCP at `127.0.0.1` and `::1` on this port (nil: the Unix socket only).
  public let tcpPort: Int?

  /// A URL naming the server by host name over TCP (`localhost`): the daemon resolves it off its loop.
  public var tcpURL: String? { tcpPort.map { "postgresql://postgres@localhost:\($0)/postgres" } }

  /// Creates the cluster and starts the server; `tcp`: also listen on a free loopback TCP port.
  public init(tcp: Bool = false) throws {
    tcpPort = tcp ? freeLoopbackPort() : nil
    guard let bin = Self.findBinaries() else {
      throw TestFailure(
        "PostgreSQL's server programs (initdb, pg_ctl) were not found: install PostgreSQL 15 (Debian: apt install "
          + "postgresql; `make test` does) or put its bin directory on PATH")
    }
    binDirectory = bin
    asPostgresUser = geteuid() == 0
    directory = temporaryDirectory()
    if asPostgresUser {
      guard let user = getpwnam("postgres") else {
        throw TestFailure("running as root, but there is no postgres user to run PostgreSQL as")
      }
      chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
      chmod(directory, 0o755)
    }
    try run(
      "initdb", ["-D", "\(directory)/data", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale", "--no-sync"])
    try start()
  }

  deinit { destroy() }

  /// Starts (or restarts) the server and waits until it accepts connections.
  public func start() throws {
    // With TCP the server's port is the TCP one, and so is its socket's name.
    let listen = tcpPort == nil ? "''" : "'127.0.0.1,::1'"
    let options =
      "-c listen_addresses=\(listen) -k \(directory) -p \(port) -c fsync=off -c synchronous_commit=off"
      + " -c full_page_writes=off -c max_connections=60"
    try run(
      "pg_ctl", ["-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "120", "-o", options, "start"])
    isRunning = true
  }

  /// Stops the server (fast shutdown: clients are disconnected) and waits until it has.
  public func stop() throws {
    guard isRunning else { return }
    try run("pg_ctl", ["-D", "\(directory)/data", "-m", "fast", "-w", "-t", "120", "stop"])
    isRunning = false
  }

  /// Runs SQL with `psql` and returns its unaligned, tuples-only output.
  @discardableResult
  public func query(_ sql: String) throws -> String {
    try run(
      "psql",
      ["-X", "-q", "-A", "-t", "-h", directory, "-p", String(port), "-U", "postgres", "-d", "postgres", "-c", sql])
  }

  /// A `psql` session that keeps a transaction open: statements are sent on its standard input, so it can hold a lock
  /// while a test does something else (a push blocked in PostgreSQL). ``release()`` rolls it back and waits.
  public final class Session: @unchecked Sendable {
    private let pid: pid_t
    private var input: Int32

    fileprivate init(pid: pid_t, input: Int32) {
      self.pid = pid
      self.input = input
    }

    /// Sends statements (a newline is added).
    public func send(_ sql: String) {
      let bytes = Array((sql + "\n").utf8)
      _ = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
    }

    /// Rolls back, ends the session and waits for psql to exit. Idempotent.
    public func release() {
      guard input >= 0 else { return }
      send("ROLLBACK;")
      close(input)
      input = -1
      var status: Int32 = 0
      while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    deinit { release() }
  }

  /// Starts a `psql` session and sends it `sql`. Its output goes to `session.out`, its errors to `session.err`.
  public func session(_ sql: String) throws -> Session {
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { throw TestFailure("pipe: \(String(cString: strerror(errno)))") }
    let arguments = ["-X", "-q", "-h", directory, "-p", String(port), "-U", "postgres", "-d", "postgres"]
    let pid: pid_t
    do {
      pid = try spawn(
        "psql", arguments, input: .descriptor(pipeEnds[0]), closing: [pipeEnds[1]],
        output: "\(directory)/session.out", errors: "\(directory)/session.err", append: true)
    } catch {
      close(pipeEnds[0])
      close(pipeEnds[1])
      throw error
    }
    close(pipeEnds[0])
    let session = Session(pid: pid, input: pipeEnds[1])
    session.send(sql)
    return session
  }

  /// Stops the server if it runs and removes the directory. Idempotent.
  public func destroy() {
    if isRunning {
      _ = try? run("pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "-t", "60", "stop"])
      isRunning = false
    }
    try? FileManager.default.removeItem(atPath: directory)
  }

  /// The server's log, for failure messages.
  public var log: String { (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? "" }

  /// Runs a PostgreSQL program to completion (as the `postgres` user when root) and returns its standard output.
  ///
  /// Its standard error is kept apart (a warning is never read as a query's result) and shown when the program fails.
  @discardableResult
  private func run(_ program: String, _ arguments: [String]) throws -> String {
    let stem = "\(directory)/.\(program)-\(UInt32.random(in: 0...UInt32.max))"
    defer {
      unlink("\(stem).out")
      unlink("\(stem).err")
    }
    let pid = try spawn(program, arguments, output: "\(stem).out", errors: "\(stem).err")
    let status = try waitForExit(pid)
    let output = (try? String(contentsOfFile: "\(stem).out", encoding: .utf8)) ?? ""
    let errors = (try? String(contentsOfFile: "\(stem).err", encoding: .utf8)) ?? ""
    let exited = status & 0x7f == 0
    let code = (status >> 8) & 0xff
    guard exited && code == 0 else {
      throw TestFailure(
        "\(program) \(arguments.joined(separator: " ")) failed (status \(status)): \(errors)\(output)\n\(log)")
    }
    return output
  }

  /// Starts a PostgreSQL program, as the `postgres` user when root, with the server's directory as its working
  /// directory: the caller's may be one the `postgres` user cannot enter (a checkout in a 0700 home or `mktemp -d`),
  /// and every program would then warn that it cannot change directory.
  private func spawn(
    _ program: String, _ arguments: [String], input: ChildStream = .null, closing: [Int32] = [], output: String,
    errors: String, append: Bool = false
  ) throws -> pid_t {
    let executable = "\(binDirectory)/\(program)"
    let argv =
      asPostgresUser ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
    return try spawnChild(
      argv, workingDirectory: directory, input: input, output: .file(output, append: append),
      errors: .file(errors, append: append), closing: closing)
  }

  /// PostgreSQL's bin directory: `TIPSD_PG_BIN`, else the directory of an `initdb` on PATH, else the newest
  /// `/usr/lib/postgresql/*/bin` (Debian keeps the server programs off PATH).
  public static func findBinaries() -> String? {
    let fileManager = FileManager.default
    func usable(_ directory: String) -> Bool {
      fileManager.isExecutableFile(atPath: "\(directory)/initdb")
        && fileManager.isExecutableFile(atPath: "\(directory)/pg_ctl")
    }
    if let explicit = ProcessInfo.processInfo.environment["TIPSD_PG_BIN"], usable(explicit) { return explicit }
    let debian = "/usr/lib/postgresql"
    let versions = ((try? fileManager.contentsOfDirectory(atPath: debian)) ?? []).compactMap(Int.init).sorted()
    for version in versions.reversed() where usable("\(debian)/\(version)/bin") { return "\(debian)/\(version)/bin" }
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) {
      guard usable(directory) else { continue }
      // A symlink on PATH (/usr/local/bin/initdb): the real directory holds psql and the rest.
      let resolved = URL(fileURLWithPath: "\(directory)/initdb").resolvingSymlinksInPath().deletingLastPathComponent()
        .path
      return usable(resolved) ? resolved : directory
    }
    return nil
  }
}
