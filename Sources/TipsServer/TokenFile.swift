import TipsSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The WebSocket listener's token: 256 random bits as 64 lowercase hex characters, in a file only the daemon's user
/// can read (mode 0600), beside the socket unless `--token-file` says otherwise. `tipsd token` prints it.
///
/// A valid token file is kept across restarts (a development app keeps working); delete it to make a new one.
public enum TokenFile {
  /// `token` in the socket's directory.
  public static func defaultPath(socketPath: String) -> String {
    guard let slash = socketPath.lastIndex(of: "/") else { return "token" }
    return String(socketPath[..<slash]) + "/token"
  }

  /// Whether `text` is a token: exactly 64 lowercase hex characters.
  static func isValid(_ text: String) -> Bool {
    text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
  }

  /// A new token from the system's cryptographic random source.
  static func generate() -> String {
    var generator = SystemRandomNumberGenerator()
    let hex = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    for _ in 0..<32 {
      let byte = UInt8.random(in: 0...255, using: &generator)
      text += [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
    }
    return String(decoding: text, as: UTF8.self)
  }

  /// Refuses a secret's file that is not a regular file owned by the daemon's user and closed to everyone else (the
  /// admin token, the JWT secret): another user who could read or replace it could sign in as anyone.
  static func checkPrivate(_ path: String, what: String) throws(ServerError) {
    var info = stat()
    guard lstat(path, &info) == 0 else {
      throw ServerError("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
    }
    try checkPrivate(path, what: what, info: info, remedy: "chmod 600 it, as tipsd's user")
  }

  private static func checkPrivate(_ path: String, what: String, info: stat, remedy: String) throws(ServerError) {
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw ServerError("\(what) \(path) is not a regular file; \(remedy)")
    }
    guard info.st_uid == getuid() else {
      throw ServerError("\(what) \(path) belongs to another user; \(remedy)")
    }
    guard info.st_mode & 0o077 == 0 else {
      throw ServerError(
        "\(what) \(path) is open to others (mode \(String(info.st_mode & 0o777, radix: 8))); \(remedy)")
    }
  }

  /// Reads the token at `path`.
  public static func read(_ path: String) throws(ServerError) -> String {
    let bytes: [UInt8]
    do {
      bytes = try System.readFile(path)
    } catch {
      if error.code == ENOENT {
        throw ServerError("no token at \(path): start `tipsd serve --listen 127.0.0.1:PORT` first (it creates one)")
      }
      throw ServerError("cannot read the token file \(path): \(error.reason)")
    }
    let text = String(decoding: bytes, as: UTF8.self).trimmingNewlines()
    guard isValid(text) else { throw ServerError("\(path) does not hold a token (64 hex characters); delete it") }
    return text
  }

  /// The fewest bytes an admin token file may hold: 256 bits as hex is 64, and anything under 32 bytes can be
  /// guessed or was typed by hand.
  static let minimumAdminBytes = 32

  /// The token at `path`, creating the file (0600, written then renamed into place) when it is missing or does not
  /// hold a valid token. A file another user owns, or one others can read, is refused; so is, with `admin`, a file
  /// holding fewer than ``minimumAdminBytes`` bytes (a short admin token is someone's mistake, not replaced quietly).
  static func ensure(_ path: String, admin: Bool = false) throws(ServerError) -> (token: String, created: Bool) {
    var info = stat()
    if lstat(path, &info) == 0 {
      try checkPrivate(path, what: "the token file", info: info, remedy: "remove it or choose --token-file")
      if let token = try? read(path) { return (token, false) }
      if admin, let bytes = try? System.readFile(path),
        String(decoding: bytes, as: UTF8.self).trimmingNewlines().utf8.count < minimumAdminBytes
      {
        throw ServerError(
          "the admin token file \(path) holds fewer than \(minimumAdminBytes) bytes: delete it (tipsd makes a random "
            + "token) or write 64 random hex characters into it (openssl rand -hex 32)")
      }
    }
    let token = generate()
    let staging = "\(path).\(getpid()).tmp"
    do {
      let fd = try System.call("create \(staging)") { open(staging, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
      defer { close(fd) }
      try System.writeAll(fd, Array((token + "\n").utf8), what: "write \(staging)")
      try System.call("rename \(staging)") { rename(staging, path) }
    } catch {
      unlink(staging)
      throw ServerError("cannot create the token file \(path): \(error.reason)")
    }
    return (token, true)
  }
}

extension String {
  fileprivate func trimmingNewlines() -> String {
    var text = self
    while text.hasSuffix("\n") || text.hasSuffix("\r") || text.hasSuffix(" ") { text.removeLast() }
    return text
  }
}
