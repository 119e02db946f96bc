import TipsAuth
import TipsHosted
import TipsJSON
import TipsSystem

extension AccountKey {
  /// Why `key` does not name an account an admin may act on (`sub`, or `APP/sub` of an app other than `default`), or
  /// nil.
  static func problem(_ key: String) -> String? {
    let app = app(of: key)
    if key.utf8.contains(UInt8(ascii: "/")) {
      if app == defaultApp { return "the app default's accounts are named by their sub alone" }
      if let problem = appProblem(app) { return problem }
    }
    return Subject.problem(subject(of: key))
  }
}

/// One app of the deployment, as `--apps FILE` declares it: its sign-in, its catalog and its per-account budgets.
public struct HostedApp: Sendable, Equatable {
  public var id: String
  /// HS256/384/512 secret file, or…
  public var jwtSecretFile: String?
  /// …a JWKS file (RS256/ES256).
  public var jwksFile: String?
  /// A token's `aud` must name one of them.
  public var audiences: [String]
  /// A token's `iss` must be it.
  public var issuer: String?
  /// The app's catalog file.
  public var catalogPath: String
  /// Overrides of the deployment's per-account budgets for this app's accounts (nil: the flag's value).
  public var accountRate: Double?
  public var accountMaxDonations: Int?
  public var accountMaxKeys: Int?
  public var accountMaxStateBytes: Int?
  public var accountMaxSessions: Int?
  public var accountMaxHistoryRows: Int?

  public init(id: String, catalogPath: String, audiences: [String] = []) {
    self.id = id
    self.catalogPath = catalogPath
    self.audiences = audiences
  }

  static let keys: Set<String> = [
    "id", "jwtSecretFile", "jwks", "jwtAudience", "jwtIssuer", "catalog", "accountRate", "accountMaxDonations",
    "accountMaxKeys", "accountMaxStateBytes", "accountMaxSessions", "accountMaxHistoryRows",
  ]

  /// Reads `--apps FILE`: `{"apps": [{"id", "jwtSecretFile" | "jwks", "jwtAudience", "jwtIssuer"?, "catalog",
  /// …overrides}]}`. Relative paths are the file's directory's. The app `default` is the `--catalog` and `--jwt-*`
  /// flags' and may not be declared here; ids are unique.
  public static func load(_ path: String) throws(ServerError) -> [HostedApp] {
    let bytes: [UInt8]
    do {
      bytes = try System.readFile(path)
    } catch {
      throw ServerError("--apps \(path): \(error)")
    }
    return try parse(bytes, file: path)
  }

  public static func parse(_ bytes: [UInt8], file: String) throws(ServerError) -> [HostedApp] {
    func fail(_ at: String, _ message: String) -> ServerError { ServerError("--apps \(file): \(at): \(message)") }
    let root: JSONValue
    do {
      root = try JSONParser.parse(bytes)
    } catch {
      throw ServerError("--apps \(file): not JSON (\(error))")
    }
    guard case .object(let top) = root, case .array(let list)? = top["apps"], top.count == 1 else {
      throw ServerError("--apps \(file): expected {\"apps\": [...]} and nothing else")
    }
    let directory = file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) : "."
    func path(_ text: String) -> String { text.hasPrefix("/") ? text : directory + "/" + text }
    var apps: [HostedApp] = []
    for (index, item) in list.enumerated() {
      let at = "apps[\(index)]"
      guard case .object(let object) = item else { throw fail(at, "expected an object") }
      if let unknown = object.keys.filter({ !keys.contains($0) }).sorted().first {
        throw fail(at, "unknown key \"\(unknown)\" (expected \(keys.sorted().joined(separator: ", ")))")
      }
      func string(_ key: String) throws(ServerError) -> String? {
        guard let value = object[key] else { return nil }
        guard case .string(let text) = value, !text.isEmpty else { throw fail("\(at).\(key)", "expected a string") }
        return text
      }
      func number(_ key: String, max: Double) throws(ServerError) -> Double? {
        guard let value = object[key] else { return nil }
        guard let number = value.doubleValue, number > 0, number <= max else {
          throw fail("\(at).\(key)", "expected a number above 0, at most \(Int(max))")
        }
        return number
      }
      guard let id = try string("id") else { throw fail(at, "missing \"id\"") }
      if let problem = AccountKey.appProblem(id) { throw fail("\(at).id", problem) }
      guard id != AccountKey.defaultApp else {
        throw fail("\(at).id", "the app default is the --catalog and --jwt-* flags' (declare the others here)")
      }
      guard !apps.contains(where: { $0.id == id }) else { throw fail("\(at).id", "app \"\(id)\" is declared twice") }
      guard let catalog = try string("catalog") else { throw fail(at, "missing \"catalog\"") }
      var app = HostedApp(id: id, catalogPath: path(catalog))
      app.jwtSecretFile = try string("jwtSecretFile").map(path)
      app.jwksFile = try string("jwks").map(path)
      guard (app.jwtSecretFile == nil) != (app.jwksFile == nil) else {
        throw fail(at, "give exactly one of \"jwtSecretFile\" and \"jwks\"")
      }
      switch object["jwtAudience"] {
      case .string(let audience)? where !audience.isEmpty: app.audiences = [audience]
      case .array(let audiences)?:
        app.audiences = audiences.compactMap(\.stringValue).filter { !$0.isEmpty }
        guard app.audiences.count == audiences.count, !audiences.isEmpty else {
          throw fail("\(at).jwtAudience", "expected a string or a non-empty array of strings")
        }
      case nil: throw fail(at, "missing \"jwtAudience\" (a token of another app must never sign in to this one)")
      default: throw fail("\(at).jwtAudience", "expected a string or a non-empty array of strings")
      }
      app.issuer = try string("jwtIssuer")
      app.accountRate = try number("accountRate", max: 1_000_000)
      app.accountMaxDonations = try number("accountMaxDonations", max: 1e9).map { Int($0) }
      app.accountMaxKeys = try number("accountMaxKeys", max: 1e9).map { Int($0) }
      app.accountMaxStateBytes = try number("accountMaxStateBytes", max: 1e9).map { Int($0) }
      app.accountMaxSessions = try number("accountMaxSessions", max: 1e6).map { Int($0) }
      app.accountMaxHistoryRows = try number("accountMaxHistoryRows", max: 1e9).map { Int($0) }
      apps.append(app)
    }
    return apps
  }
}
