public import Foundation

/// Where a spawned child's standard stream goes.
public enum ChildStream: Sendable {
  /// `/dev/null`.
  case null
  /// A descriptor of the parent's, duplicated onto the stream.
  case descriptor(Int32)
  /// A file, created or truncated (`append`: appended to).
  case file(String, append: Bool = false)
  /// The same as the child's standard output (standard error only).
  case standardOutput
}

/// Starts `argv` with `posix_spawn` in `workingDirectory` (nil: the caller's) and returns its pid; reap it with
/// ``waitForExit(_:)``.
///
/// Not Foundation's `Process`: `pg_ctl start` leaves a server behind that inherits the program's descriptors (a pipe
/// would never reach end-of-file, so output goes to files), and Foundation's child monitoring was seen to miss the exit
/// of `runuser` when two tests started their servers at once. `closing`: parent descriptors closed in the child.
public func spawnChild(
  _ argv: [String], workingDirectory: String? = nil, input: ChildStream = .null, output: ChildStream = .null,
  errors: ChildStream = .null, closing: [Int32] = []
) throws -> pid_t {
  precondition(!argv.isEmpty)
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  func redirect(_ stream: ChildStream, to target: Int32, readable: Bool) {
    switch stream {
    case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", readable ? O_RDONLY : O_WRONLY, 0)
    case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
    case .file(let path, let append):
      let flags = readable ? O_RDONLY : O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
      posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o644)
    case .standardOutput: posix_spawn_file_actions_adddup2(&actions, 1, target)
    }
  }
  redirect(input, to: 0, readable: true)
  redirect(output, to: 1, readable: false)
  redirect(errors, to: 2, readable: false)
  for descriptor in closing { posix_spawn_file_actions_addclose(&actions, descriptor) }
  if let workingDirectory {
    // glibc's posix_spawn_file_actions_addchdir_np (2.29+) is not imported into Swift: looked up by name.
    guard let addChdir = addChdirAction else {
      throw TestFailure("this C library has no posix_spawn_file_actions_addchdir_np")
    }
    let added = workingDirectory.withCString { addChdir(&actions, $0) }
    guard added == 0 else { throw TestFailure("addchdir \(workingDirectory): \(String(cString: strerror(added)))") }
  }
  let cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
  defer { for argument in cArguments { free(argument) } }
  var pid: pid_t = 0
  let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
  guard spawned == 0 else { throw TestFailure("cannot run \(argv[0]): \(String(cString: strerror(spawned)))") }
  return pid
}

/// Waits for a child started by ``spawnChild(_:workingDirectory:input:output:errors:closing:)`` and returns its
/// `waitpid` status (0: exited with code 0).
public func waitForExit(_ pid: pid_t) throws -> Int32 {
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 {
    guard errno == EINTR else { throw TestFailure("waitpid(\(pid)): \(String(cString: strerror(errno)))") }
  }
  return status
}

private typealias AddChdir =
  @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) ->
  Int32

/// `posix_spawn_file_actions_addchdir_np`, found once in the process's own symbols (RTLD_DEFAULT is a null handle).
private let addChdirAction: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
  unsafeBitCast($0, to: AddChdir.self)
}

/// A loopback TCP port free at the time of asking (the kernel's pick for a socket bound to port 0).
public func freeLoopbackPort() -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  _ = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
      _ = bind(fd, pointer, length)
      return getsockname(fd, pointer, &length)
    }
  }
  return Int(UInt16(bigEndian: address.sin_port))
}
