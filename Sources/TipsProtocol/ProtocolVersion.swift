/// The version of the protocol this build speaks: `initialize`'s `protocolVersion` (sent by every client here and
/// answered by the daemon), and `protocol/openrpc.json`'s `info.version` (a test checks they agree).
public enum ProtocolVersion {
  /// `MAJOR.MINOR`.
  public static let current = "1.3"

  /// The major version, which a client's must equal.
  public static var major: Substring { major(of: current) }

  /// The major version of `version` (`"1"` for `"1.2"`).
  public static func major(of version: String) -> Substring {
    version.split(separator: ".", maxSplits: 1).first ?? Substring(version)
  }
}
