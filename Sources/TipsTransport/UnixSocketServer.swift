// UnixSocketServer: a listening AF_UNIX socket with careful path hygiene.
import CLibUV
import Glibc
import Synchronization

/// Listens on a Unix-domain socket and hands out accepted `UVStream`s. Loop thread only.
///
/// Hygiene on `init`:
///  * the path must fit in `sun_path` (at most 107 bytes);
///  * an existing symlink or non-socket at the path is never touched;
///  * an existing socket is probed with a non-blocking `connect()`: if anyone
///    answers, another server is live and we refuse; if refused (stale
///    leftover of a crashed process) it is unlinked and replaced;
///  * the socket is created with mode 0600 (umask 077 around bind, then chmod), bound and listening under a
///    staging name and renamed into place, so its path never exists without a listener behind it.
/// The umask change is process-wide for the instant of `bind`; create servers
/// before starting threads that create files if that matters.
///
/// `close()` stops listening and unlinks the socket file if it is still ours.
public final class UnixSocketServer: LoopHandleOwner {
  let loop: UVLoop
  /// The socket path as given.
  public let path: String
  private let handle: UnsafeMutablePointer<uv_pipe_t>
  /// (st_dev, st_ino) of the socket we bound, so `close()` never unlinks a successor's socket.
  private var identity: (device: UInt64, inode: UInt64)?

  /// Called for each accepted client. Without a handler, clients are closed at once.
  /// Call `startReading()` on the connection to receive data.
  public var onConnection: ((UVStream) -> Void)?
  /// Called when `accept` fails (e.g. `EMFILE`); the server keeps listening.
  public var onAcceptError: ((UVError) -> Void)?
  /// `true` once `close()` has been called.
  public private(set) var isClosed = false
  /// Connections accepted per loop turn at most: under a flood of connections the rest wait in the kernel's backlog
  /// (libuv stops watching the listener until the pending one is taken) while the connections already established are
  /// read and written; accepting resumes at the end of the turn.
  public var acceptsPerTurn = 16
  private var acceptedThisTurn = 0
  /// A connection libuv holds for us (its watcher stopped) until the end of the turn.
  private var acceptDeferred = false

  /// The longest usable path: `sizeof(sun_path) - 1` (107 on Linux).
  public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

  public init(loop: UVLoop, path: String, backlog: Int32 = 128) throws(TransportError) {
    loop.assertUsable()
    try Self.validate(path)
    try Self.removeStaleSocket(at: path)

    self.loop = loop
    self.path = path
    handle = .allocate(capacity: 1)
    handle.initialize(to: uv_pipe_t())
    mustSucceed(uv_pipe_init(loop.uvLoop, handle, 0), "uv_pipe_init")
    retainOwner(self, in: asHandle(handle))

    // Bind and listen under a private staging name, then rename into place: a client that sees the socket file
    // can always connect (no window between bind and listen where it would get ECONNREFUSED).
    let staging = Self.stagingPath(for: path)
    Self.removeLeftoverStaging(staging, path: path)
    let oldMask = umask(0o077)
    let bound = uv_pipe_bind(handle, staging)
    umask(oldMask)
    if bound < 0 {
      close(unlinking: false)
      let cause = UVError(code: bound, operation: "uv_pipe_bind")
      throw TransportError("cannot bind Unix socket \(path)\(Self.bindHint(path, bound))", cause: cause)
    }
    guard chmod(staging, 0o600) == 0 else {
      let cause = UVError(code: -errno, operation: "chmod")
      close(unlinking: false)
      unlink(staging)
      throw TransportError("cannot restrict Unix socket \(path) to mode 0600", cause: cause)
    }
    let listening = uv_listen(asStream(handle), backlog) { server, status in
      guard let server, let listener = owner(of: asHandle(server), as: UnixSocketServer.self) else { return }
      listener.accept(status: status)
    }
    if listening < 0 {
      close(unlinking: false)
      unlink(staging)
      throw TransportError(
        "cannot listen on Unix socket \(path)", cause: UVError(code: listening, operation: "uv_listen"))
    }
    var info = stat()
    guard staging == path || rename(staging, path) == 0, lstat(path, &info) == 0 else {
      let cause = UVError(code: -errno, operation: "rename")
      close(unlinking: false)
      unlink(staging)
      throw TransportError("cannot move Unix socket into place at \(path)", cause: cause)
    }
    identity = (UInt64(info.st_dev), UInt64(info.st_ino))
  }

  /// Servers created by this process so far, so each gets its own staging name.
  private static let serversCreated = Atomic<UInt64>(0)

  /// A name beside `path` to bind before renaming into place, or `path` itself when that name would be too long.
  ///
  /// Unique per server, not per process: the pid, a per-process counter and a random suffix, so servers created
  /// concurrently in one directory (two listeners of one daemon, parallel tests) never share it, and a staging file
  /// left by a crashed process whose pid is reused is not ours either. A leftover under our exact name (never
  /// expected) is removed before binding.
  static func stagingPath(for path: String) -> String {
    let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    let serial = serversCreated.wrappingAdd(1, ordering: .relaxed).newValue
    let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
    let staging = "\(directory)/.tipsd-\(getpid())-\(serial)-\(suffix).sock.tmp"
    return staging.utf8.count <= maximumPathLength ? staging : path
  }

  /// Unlinks a leftover socket at the staging name (never a file of another kind, never through a symlink).
  private static func removeLeftoverStaging(_ staging: String, path: String) {
    guard staging != path else { return }
    var info = stat()
    if lstat(staging, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { unlink(staging) }
  }

  private func accept(status: Int32) {
    if status < 0 {
      onAcceptError?(UVError(code: status, operation: "accept"))
      return
    }
    if acceptedThisTurn == 0 { loop.atEndOfTurn { [self] in turnEnded() } }
    guard acceptedThisTurn < acceptsPerTurn else {
      // Not calling uv_accept makes libuv stop polling the listener; `turnEnded` takes this one and resumes.
      acceptDeferred = true
      return
    }
    acceptedThisTurn += 1
    acceptOne()
  }

  private func turnEnded() {
    acceptedThisTurn = 0
    guard acceptDeferred else { return }
    acceptDeferred = false
    if !isClosed { acceptOne() }
  }

  private func acceptOne() {
    let client = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
    client.initialize(to: uv_pipe_t())
    mustSucceed(uv_pipe_init(loop.uvLoop, client, 0), "uv_pipe_init")
    let rc = uv_accept(asStream(handle), asStream(client))
    if rc < 0 {
      closeOrphanStream(asStream(client))
      onAcceptError?(UVError(code: rc, operation: "uv_accept"))
      return
    }
    let connection = UVStream(loop: loop, input: asStream(client), output: asStream(client), isUnixSocket: true)
    if let onConnection {
      onConnection(connection)
    } else {
      connection.close(after: false, reason: "server has no connection handler")
    }
  }

  /// Stops listening and unlinks the socket file (only if it is still the one we
  /// created). Already-accepted connections stay open. Idempotent.
  public func close() {
    loop.assertOnLoopThread()
    close(unlinking: true)
  }

  private func close(unlinking: Bool) {
    guard !isClosed else { return }
    isClosed = true
    uv_close(asHandle(handle)) { h in
      guard let h, let server = releaseOwner(of: h, as: UnixSocketServer.self) else { return }
      server.onConnection = nil
      server.onAcceptError = nil
      server.handle.deallocate()
    }
    guard unlinking, let identity else { return }
    var info = stat()
    if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK,
      UInt64(info.st_dev) == identity.device, UInt64(info.st_ino) == identity.inode
    {
      unlink(path)
    }
  }

  func closeForLoopShutdown() { close() }

  // MARK: Path hygiene

  private static func validate(_ path: String) throws(TransportError) {
    if path.isEmpty { throw TransportError("the Unix socket path is empty") }
    if path.utf8.contains(0) { throw TransportError("the Unix socket path contains a NUL byte") }
    let length = path.utf8.count
    if length > maximumPathLength {
      throw TransportError(
        "the Unix socket path \(path) is \(length) bytes long; the limit is \(maximumPathLength) "
          + "(sizeof(sun_path) - 1). Choose a shorter path, e.g. under $XDG_RUNTIME_DIR or /tmp")
    }
  }

  /// libuv reports a missing directory as EACCES (for Windows parity), so look for ourselves.
  private static func bindHint(_ path: String, _ code: Int32) -> String {
    guard code == UV_EACCES.rawValue || code == UV_ENOENT.rawValue || code == UV_ENOTDIR.rawValue else { return "" }
    let directory = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "."
    var info = stat()
    if stat(directory.isEmpty ? "/" : directory, &info) != 0 || info.st_mode & S_IFMT != S_IFDIR {
      return " (does the directory \(directory) exist?)"
    }
    return " (check permissions on \(directory))"
  }

  private static func removeStaleSocket(at path: String) throws(TransportError) {
    var info = stat()
    if lstat(path, &info) != 0 {
      let code = errno
      if code == ENOENT { return }
      throw TransportError("cannot inspect \(path)", cause: UVError(code: -code, operation: "lstat"))
    }
    switch info.st_mode & S_IFMT {
    case S_IFLNK:
      throw TransportError("\(path) is a symbolic link; refusing to bind through it (remove it or choose another path)")
    case S_IFSOCK:
      break
    default:
      throw TransportError("\(path) exists and is not a socket; refusing to replace it")
    }
    switch probe(path) {
    case 0:
      throw TransportError("another tipsd is serving \(path); stop it first or choose a different socket path")
    case -ECONNREFUSED:
      // Nobody listening: a leftover from a process that died without cleaning up.
      if unlink(path) != 0, errno != ENOENT {
        throw TransportError("cannot remove stale socket \(path)", cause: UVError(code: -errno, operation: "unlink"))
      }
    case -ENOENT:
      return  // vanished meanwhile
    case -EAGAIN:
      throw TransportError(
        "another tipsd is serving \(path) (its backlog is full); stop it first or choose a different socket path")
    case let code:
      throw TransportError("cannot tell whether \(path) is in use", cause: UVError(code: code, operation: "connect"))
    }
  }

  /// Non-blocking `connect()` to `path`: 0 if someone is listening, else `-errno`.
  private static func probe(_ path: String) -> Int32 {
    let fd = UnixSocketClient.connect(path, nonBlocking: true)
    guard fd >= 0 else { return fd }
    Glibc.close(fd)
    return 0
  }
}
