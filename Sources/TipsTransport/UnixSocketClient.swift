// UnixSocketClient: a plain blocking connect to a Unix socket, for clients outside the event loop.
import Glibc

/// Connects a new `AF_UNIX` stream socket to a path with plain POSIX calls — for the daemon's own probe of a
/// socket file, `tipsd call`, tests and benchmarks, none of which run on an event loop.
public enum UnixSocketClient {
  /// Returns the connected descriptor (close-on-exec), or `-errno` (`-ENAMETOOLONG` for a path longer than
  /// ``UnixSocketServer/maximumPathLength``). `nonBlocking` makes the connect (and the descriptor) non-blocking.
  public static func connect(_ path: String, nonBlocking: Bool = false) -> Int32 {
    guard path.utf8.count <= UnixSocketServer.maximumPathLength else { return -ENAMETOOLONG }
    var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
    let fd = socket(AF_UNIX, type, 0)
    if fd < 0 { return -errno }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
      sunPath.copyBytes(from: path.utf8)  // checked: shorter than sun_path, so NUL-terminated
    }
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard rc == 0 else {
      let code = errno
      Glibc.close(fd)
      return -code
    }
    return fd
  }
}
