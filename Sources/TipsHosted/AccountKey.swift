/// Apps per deployment (#48): how an app's account is named inside the node and in PostgreSQL.
///
/// A JWT's `sub` never holds `/` (TipsAuth's `Subject`), so the node keys an account by its `sub` alone for the app `default`
/// (every deployment's accounts before apps existed, unchanged) and by `APP/sub` for any other app. Every table keyed
/// by account — accounts, operations, history, idempotency keys, exposures, erasures, devices — is thereby keyed by
/// (app, account) with no table rewritten, and two apps' same `sub` are different accounts everywhere.
public enum AccountKey {
  /// The app of sessions that name none, and of the `--catalog` and `--jwt-*` flags.
  public static let defaultApp = "default"

  /// The key of `subject`'s account in `app`.
  public static func compose(app: String, subject: String) -> String {
    app == defaultApp ? subject : app + "/" + subject
  }

  /// The app an account key belongs to.
  public static func app(of key: String) -> String {
    guard let slash = key.utf8.firstIndex(of: UInt8(ascii: "/")) else { return defaultApp }
    return String(key[..<slash])
  }

  /// The `sub` an account key names (what its user knows it as).
  public static func subject(of key: String) -> String {
    guard let slash = key.utf8.firstIndex(of: UInt8(ascii: "/")) else { return key }
    return String(key[key.utf8.index(after: slash)...])
  }

  /// Why `id` is not an app id (`[a-z0-9][a-z0-9-]{0,62}`), or nil.
  public static func appProblem(_ id: String) -> String? {
    let bytes = Array(id.utf8)
    guard (1...63).contains(bytes.count) else { return "an app id is 1 to 63 characters" }
    for (index, byte) in bytes.enumerated() {
      let letterOrDigit =
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
      guard letterOrDigit || (index > 0 && byte == UInt8(ascii: "-")) else {
        return "an app id is lowercase letters, digits and '-' (not first)"
      }
    }
    return nil
  }
}
