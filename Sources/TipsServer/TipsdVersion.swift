/// The daemon's own version, reported by `initialize` (`serverInfo.version`), `GET /healthz` and `tipsd --version`.
/// The protocol's version is ``TipsProtocol/ProtocolVersion``.
public enum TipsdVersion {
  public static let server = "0.1.0"
}
