/// A `--listen HOST:PORT` address: `127.0.0.1:8787`, `[::1]:8787`, `localhost:8787` (IPv4 loopback), or a
/// non-loopback address (allowed only with TLS). Port 0 asks the kernel for a free port.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
  /// The address to bind, without brackets (`127.0.0.1`, `::1`, `0.0.0.0`).
  public var host: String
  public var port: Int

  public init(host: String, port: Int) {
    self.host = host
    self.port = port
  }

  /// Parses `HOST:PORT` (`[IPV6]:PORT` for IPv6); `localhost` means `127.0.0.1`.
  public init(parsing text: String) throws(TransportError) {
    let hostPart: Substring
    let portPart: Substring
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
        throw TransportError("--listen \(text): expected [IPV6]:PORT, e.g. [::1]:8787")
      }
      hostPart = text[text.index(after: text.startIndex)..<close]
      portPart = text[text.index(close, offsetBy: 2)...]
    } else {
      guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
        throw TransportError("--listen \(text): expected HOST:PORT, e.g. 127.0.0.1:8787 (IPv6 in brackets: [::1]:8787)")
      }
      hostPart = text[..<colon]
      portPart = text[text.index(after: colon)...]
    }
    guard let port = Int(portPart), (0...65_535).contains(port) else {
      throw TransportError("--listen \(text): the port must be a number from 0 to 65535")
    }
    guard !hostPart.isEmpty else { throw TransportError("--listen \(text): the host is missing") }
    host = hostPart.lowercased() == "localhost" ? "127.0.0.1" : String(hostPart)
    self.port = port
  }

  public var isIPv6: Bool { host.contains(":") }

  /// Whether only this machine can reach it: 127.0.0.0/8 or ::1.
  public var isLoopback: Bool {
    if isIPv6 { return host == "::1" || host == "0:0:0:0:0:0:0:1" }
    return host.hasPrefix("127.")
  }

  /// Whether it binds every interface (`0.0.0.0`, `::`).
  public var isWildcard: Bool { host == "0.0.0.0" || host == "::" }

  /// `host:port`, with brackets around an IPv6 host.
  public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

  /// The same address on another port (the one the kernel chose for port 0).
  public func with(port: Int) -> ListenAddress { ListenAddress(host: host, port: port) }
}
