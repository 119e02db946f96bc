import TipsSystem

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

// File-system helpers: parent directories, the ownership lock, moving a damaged datastore aside.

/// Whether something exists at `path`, and its size.
func fileSize(_ path: String) -> Int? {
  var info = stat()
  guard stat(path, &info) == 0 else { return nil }
  return Int(info.st_size)
}

/// The directory part of `path` ("" when it has none).
func parentDirectory(of path: String) -> String {
  guard let slash = path.lastIndex(of: "/") else { return "" }
  let parent = String(path[..<slash])
  return parent.isEmpty ? "/" : parent
}

/// Creates `directory` and any missing ancestors with mode 0700; existing directories are left as they are.
func createDirectories(_ directory: String) throws(DatastoreError) {
  guard !directory.isEmpty, directory != "/" else { return }
  var info = stat()
  if stat(directory, &info) == 0 {
    guard (info.st_mode & S_IFMT) == S_IFDIR else {
      throw DatastoreError(
        path: directory, message: "cannot create the datastore directory \(directory): a file is in the way")
    }
    return
  }
  try createDirectories(parentDirectory(of: directory))
  if mkdir(directory, 0o700) != 0 && errno != EEXIST {
    let code = errno
    throw DatastoreError(
      path: directory,
      message: "cannot create the datastore directory \(directory): \(System.message(code))")
  }
}

/// An exclusive advisory lock (`flock`) on `<datastore>.lock`, held for the life of a ``Datastore``.
///
/// `flock` locks belong to an open file description, so a second open of the same datastore is refused even
/// inside one process, and the kernel releases the lock when the holder dies (kill -9 included). The lock file
/// holds the holder's pid so that the refusal can name it; it is never deleted (deleting it would let two
/// processes lock two different files of the same name).
struct FileLock {
  let descriptor: Int32
  let path: String

  static func acquire(_ lockPath: String, datastorePath: String) throws(DatastoreError) -> FileLock {
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      let code = errno
      throw DatastoreError(
        path: datastorePath,
        message: "cannot open the lock file \(lockPath) of the datastore \(datastorePath): \(System.message(code))")
    }
    if !lockBriefly(fd) {
      let code = errno
      let holder = readPid(fd)
      close(fd)
      if code == EWOULDBLOCK {
        let who = holder.map { "pid \($0)" } ?? "another process"
        throw DatastoreError(
          path: datastorePath,
          message: "another tipsd is using the datastore \(datastorePath) (lock \(lockPath) held by \(who))")
      }
      throw DatastoreError(
        path: datastorePath,
        message: "cannot lock \(lockPath) for the datastore \(datastorePath): \(System.message(code))")
    }
    let pid = Array("\(getpid())\n".utf8)
    if ftruncate(fd, 0) == 0 {
      _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }
    return FileLock(descriptor: fd, path: lockPath)
  }

  /// Takes the lock, waiting up to a quarter of a second while the holder named in the file is this process: a
  /// datastore this process just closed can still be locked for a moment by a child forked meanwhile (another
  /// thread starting a program: the child holds the open file description until its exec closes it). A second open
  /// of a datastore this process still holds is refused all the same, a quarter of a second later. False (errno set
  /// by `flock`) when not taken.
  private static func lockBriefly(_ fd: Int32) -> Bool {
    for _ in 0..<50 {
      if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
      guard errno == EWOULDBLOCK, readPid(fd) == Int(getpid()) else { return false }
      usleep(5_000)
    }
    if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
    return false
  }

  /// The pid written in the lock file by its holder, if readable.
  private static func readPid(_ fd: Int32) -> Int? {
    var buffer = [UInt8](repeating: 0, count: 32)
    let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    guard count > 0 else { return nil }
    let text = String(decoding: buffer[..<count], as: UTF8.self)
    return Int(text.prefix { $0 != "\n" })
  }

  /// Releases the lock (closing the descriptor drops it).
  func release() {
    close(descriptor)
  }
}

/// `YYYYMMDDTHHMMSSZ` for the current UTC time.
func utcStamp() -> String {
  var now = time(nil)
  var parts = tm()
  gmtime_r(&now, &parts)
  var buffer = [CChar](repeating: 0, count: 32)
  let count = strftime(&buffer, buffer.count, "%Y%m%dT%H%M%SZ", &parts)
  return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Moves a damaged datastore and its `-wal`/`-shm`/`-journal` companions to `<path>.corrupt-<UTC stamp>` (with a
/// numeric suffix when that name is taken) and returns the new path of the main file. The WAL goes first: a
/// stale WAL left beside a fresh database would be replayed into it.
func moveAside(_ path: String) throws(DatastoreError) -> String {
  let stamp = utcStamp()
  var target = "\(path).corrupt-\(stamp)"
  var attempt = 2
  while fileSize(target) != nil || fileSize(target + "-wal") != nil {
    target = "\(path).corrupt-\(stamp)-\(attempt)"
    attempt += 1
  }
  for suffix in ["-wal", "-shm", "-journal", ""] where fileSize(path + suffix) != nil {
    if rename(path + suffix, target + suffix) != 0 {
      let code = errno
      throw DatastoreError(
        path: path,
        message:
          "cannot move the damaged datastore \(path + suffix) aside to \(target + suffix): \(System.message(code))"
      )
    }
  }
  return target
}
