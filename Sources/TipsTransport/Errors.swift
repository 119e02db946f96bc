// Errors: the single funnel for libuv return codes, and transport-level errors.
import CLibUV

/// A failed libuv (or POSIX) call.
///
/// libuv reports errors as negative integers; on Unix they are `-errno`, so
/// POSIX failures are wrapped the same way (`UVError(code: -errno, ...)`).
public struct UVError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The negative libuv error code, e.g. `-32` for `EPIPE`.
  public let code: Int32
  /// The symbolic name from `uv_err_name`, e.g. `"EPIPE"`.
  public let name: String
  /// The human-readable text from `uv_strerror`, e.g. `"broken pipe"`.
  public let message: String
  /// What was being attempted, e.g. `"uv_pipe_bind"` or `"read"`.
  public let operation: String

  public init(code: Int32, operation: String) {
    self.code = code
    self.operation = operation
    self.name = String(cString: uv_err_name(code))
    self.message = String(cString: uv_strerror(code))
  }

  public var description: String { "\(operation): \(message) (\(name))" }

  /// `true` when the peer went away (`ECONNRESET`, `EPIPE`).
  public var isPeerGone: Bool { code == UV_ECONNRESET.rawValue || code == UV_EPIPE.rawValue }
}

/// The one funnel for libuv return codes: negative means failure.
@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(UVError) {
  if rc < 0 { throw UVError(code: rc, operation: operation()) }
}

/// For calls that can only fail through programmer error (e.g. starting a
/// closed handle): funnels through `check` and traps with the libuv message.
@inline(__always)
func mustSucceed(_ rc: Int32, _ operation: @autoclosure () -> String) {
  do { try check(rc, operation()) } catch { preconditionFailure("tipsd: \(error)") }
}

/// A transport setup failure with an actionable message, e.g.
/// "/run/tipsd.sock exists and is not a socket; refusing to replace it".
public struct TransportError: Error, Sendable, CustomStringConvertible {
  /// What went wrong and, where possible, what to do about it.
  public let message: String
  /// The underlying libuv/POSIX failure, if any.
  public let cause: UVError?

  public init(_ message: String, cause: UVError? = nil) {
    self.message = message
    self.cause = cause
  }

  public var description: String {
    guard let cause else { return message }
    return "\(message) [\(cause)]"
  }
}
