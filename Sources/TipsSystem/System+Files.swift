// Whole-file writes and directory listings, for the catalog tools (`tipsd lint`, `tipsd strings`).
#if canImport(Glibc)
  import Glibc
#endif

extension System {
  /// Writes `bytes` to `path` atomically: into a temporary file beside it (mode 0644 before the umask), then
  /// renamed over `path`, so a reader never sees half a file.
  public static func writeFile(_ path: String, _ bytes: [UInt8]) throws(SystemError) {
    let temporary = "\(path).tmp-\(getpid())"
    let fd = try call("create \(temporary)") { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
    do {
      try writeAll(fd, bytes, what: "write \(temporary)")
    } catch {
      close(fd)
      unlink(temporary)
      throw error
    }
    close(fd)
    do {
      try call("rename \(temporary) to \(path)") { rename(temporary, path) }
    } catch {
      unlink(temporary)
      throw error
    }
  }

  /// `("dir", "file")` of a path: `"."` for a bare file name, `"/"` for a file at the root.
  public static func splitPath(_ path: String) -> (directory: String, name: String) {
    guard let slash = path.lastIndex(of: "/") else { return (".", path) }
    let directory = String(path[..<slash])
    return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
  }

  /// Creates `path` and its missing parents (mode 0755 before the umask); an existing directory is fine.
  public static func makeDirectories(_ path: String) throws(SystemError) {
    if path.isEmpty || isDirectory(path) { return }
    if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
      try makeDirectories(String(path[..<slash]))
    }
    if mkdir(path, 0o755) != 0 && errno != EEXIST {
      throw SystemError(code: errno, operation: "mkdir \(path)")
    }
  }

  /// Whether `path` names a directory (following symlinks).
  public static func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
  }

  /// The names in a directory (not `.` and `..`), sorted by their UTF-8 bytes.
  public static func listDirectory(_ path: String) throws(SystemError) -> [String] {
    guard let directory = opendir(path) else { throw SystemError(code: errno, operation: "open directory \(path)") }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
  }
}
