import TipsSystem

#if canImport(Glibc)
  import Glibc
#endif

// The one logging type of tipsd: the daemon (logfmt on stderr), sync across devices and the language server all log
// through a `Logger`; what becomes of a record is its handler's business (stderr, memory for tests, nothing).

/// Severity of a log record, lowest first.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
  case trace, debug, info, notice, warning, error

  public init?(name: String) {
    guard let level = LogLevel.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
    self = level
  }

  public var description: String {
    switch self {
    case .trace: "trace"
    case .debug: "debug"
    case .info: "info"
    case .notice: "notice"
    case .warning: "warning"
    case .error: "error"
    }
  }

  public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Where log records go (the shape of swift-log's `LogHandler`).
public protocol LogHandler: AnyObject {
  func log(level: LogLevel, message: String, metadata: [(String, String)])
}

/// A small structured logger value: `logger.info("client connected", [("connection", "3")])`.
public struct Logger {
  public var level: LogLevel
  public let handler: any LogHandler

  public init(level: LogLevel = .info, handler: any LogHandler = StderrLogHandler()) {
    self.level = level
    self.handler = handler
  }

  /// A logger that drops everything.
  public static var discarding: Logger { Logger(level: .error, handler: DiscardingLogHandler()) }

  public func log(_ level: LogLevel, _ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
    guard level >= self.level else { return }
    handler.log(level: level, message: message(), metadata: metadata)
  }

  public func trace(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
    log(.trace, message(), metadata)
  }
  public func debug(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
    log(.debug, message(), metadata)
  }
  public func info(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
    log(.info, message(), metadata)
  }
  public func notice(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
    log(.notice, message(), metadata)
  }
  public func warning(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
    log(.warning, message(), metadata)
  }
  public func error(_ message: @autoclosure () -> String, _ metadata: [(String, String)] = []) {
    log(.error, message(), metadata)
  }
}

/// Writes one logfmt line per record to stderr: `ts=… level=info msg="…" key=value`.
/// stdout is never touched: in stdio mode it belongs to the protocol.
public final class StderrLogHandler: LogHandler {
  public init() {}

  public func log(level: LogLevel, message: String, metadata: [(String, String)]) {
    var line = "ts=\(Self.timestamp()) level=\(level) msg=\(Self.quote(message))"
    for (key, value) in metadata { line += " \(key)=\(Self.quote(value))" }
    writeStderr(line + "\n")
  }

  static func quote(_ s: String) -> String {
    if !s.isEmpty, s.utf8.allSatisfy({ $0 > 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") && $0 < 0x7F })
    {
      return s
    }
    var out = "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }

  static func timestamp() -> String {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    var t = ts.tv_sec
    var tmv = tm()
    gmtime_r(&t, &tmv)
    func pad(_ v: Int32, _ width: Int) -> String {
      let s = String(v)
      return String(repeating: "0", count: max(0, width - s.count)) + s
    }
    let millis = Int32(ts.tv_nsec / 1_000_000)
    return "\(pad(tmv.tm_year + 1900, 4))-\(pad(tmv.tm_mon + 1, 2))-\(pad(tmv.tm_mday, 2))T"
      + "\(pad(tmv.tm_hour, 2)):\(pad(tmv.tm_min, 2)):\(pad(tmv.tm_sec, 2)).\(pad(millis, 3))Z"
  }
}

/// Writes each record's message alone as a line on stderr, for a tool whose log is read by people rather than
/// parsed (`tipsd lsp`, whose editor shows its stderr as is). stdout is never touched.
public final class PlainStderrLogHandler: LogHandler {
  public init() {}

  public func log(level: LogLevel, message: String, metadata: [(String, String)]) {
    var line = message
    for (key, value) in metadata { line += " \(key)=\(StderrLogHandler.quote(value))" }
    writeStderr(line + "\n")
  }
}

/// Drops every record (a library's default when nobody asked for its log).
public final class DiscardingLogHandler: LogHandler {
  public init() {}
  public func log(level: LogLevel, message: String, metadata: [(String, String)]) {}
}

/// Writes text to stderr unbuffered (one `write` per call where the kernel allows), never touching stdout. A
/// failure to write a log line is ignored: there is nowhere left to report it.
func writeStderr(_ text: String) {
  try? System.writeAll(2, Array(text.utf8), what: "write to stderr")
}

/// Keeps records in memory, for in-process tests.
public final class MemoryLogHandler: LogHandler {
  public struct Record: Sendable {
    public var level: LogLevel
    public var message: String
    public var metadata: [(String, String)]
  }
  public private(set) var records: [Record] = []
  public init() {}
  public func log(level: LogLevel, message: String, metadata: [(String, String)]) {
    records.append(Record(level: level, message: message, metadata: metadata))
  }
}
