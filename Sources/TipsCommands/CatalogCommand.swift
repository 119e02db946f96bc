import TipsClient
import TipsJSON
import TipsProtocol
import TipsSystem

/// What every `tipsd catalog` command shares: the daemon's options (`--socket`, `--timeout`, `--token-file`: a
/// hosted node and its admin token) and `--app ID`.
struct CatalogTarget {
  var daemon: DaemonOptions
  var app = "default"

  init(environment: [String: String]) { daemon = DaemonOptions(environment: environment) }

  static func options<C>(_ path: WritableKeyPath<C, CatalogTarget>) -> [Option<C>] {
    DaemonOptions.options(\CatalogTarget.daemon).map { $0.lifted(path) } + [
      Option<CatalogTarget>.value("--app", as: "ID", help: "the app whose catalog it is (default: default)") {
        $0.app = $1.text
      }.lifted(path)
    ]
  }

  /// Sends `method` as the admin and prints its result; an error's message and its diagnostics go to stderr.
  func call(_ command: String, _ method: String, _ params: JSONObject) -> Int32 {
    var params = params
    params["app"] = .string(app)
    do {
      let client = try daemon.connect(as: "tipsd \(command)")
      defer { client.close() }
      print(try client.result(method, .object(params)).prettyString())
      return 0
    } catch {
      Console.error("tipsd \(command): \(error)\n")
      if let diagnostics = error.response?.data?["diagnostics"]?.arrayValue {
        for diagnostic in diagnostics {
          let severity = diagnostic["severity"]?.stringValue ?? "error"
          let path = diagnostic["path"]?.stringValue ?? "$"
          Console.error("  \(severity): \(path): \(diagnostic["message"]?.stringValue ?? "")\n")
        }
      } else if let data = error.response?.data {
        Console.error("\(data.prettyString())\n")
      }
      return 1
    }
  }

  /// A positional integer: a catalog version.
  static func version(_ text: String, what: String = "VERSION") throws(UsageError) -> Int {
    guard let version = Int(text), version >= 1 else { throw .invalid("\(what): \"\(text)\" is not a version number") }
    return version
  }

  /// The positionals, exactly `names.count` of them.
  static func positionals(_ found: [String], _ names: [String]) throws(UsageError) -> [String] {
    guard found.count >= names.count else { throw .invalid("missing \(names[found.count])") }
    guard found.count == names.count else { throw .invalid("unexpected argument \"\(found[names.count])\"") }
    return found
  }
}

/// `tipsd catalog publish FILE [--note TEXT] [--dry-run]`: `catalogs/publish` of a catalog file.
struct CatalogPublishCommand: Command {
  static let name = "catalog publish"
  static let abstract = "hosted: lint a catalog file and publish it to every node (catalogs/publish)"
  static let usage =
    "tipsd catalog publish FILE [--app ID] [--note TEXT] [--dry-run] [--socket PATH] [--token-file FILE]"
  static let discussion = """
    Sign in with the node's admin token (--token-file). A catalog with lint errors is refused and nothing changes;
    the errors are listed. --dry-run stores nothing and reports how many resident accounts would see a tip's
    shouldDisplay change. Exit status: 0 when published, 1 when refused or the daemon cannot be reached.
    """
  static let options: [Option<CatalogPublishCommand>] =
    CatalogTarget.options(\CatalogPublishCommand.target) + [
      .value("--note", as: "TEXT", help: "why (kept with the version and in the audit log)") { $0.note = $1.text },
      .flag("--dry-run", help: "store nothing: the diff and the accounts whose tips would change") {
        $0.dryRun = true
      },
    ]

  var target: CatalogTarget
  var file = ""
  var note = ""
  var dryRun = false

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    target = CatalogTarget(environment: environment)
    var found: [String] = []
    try Arguments.parse(arguments, into: &self, options: Self.options) { _, argument in found.append(argument) }
    file = try CatalogTarget.positionals(found, ["FILE"])[0]
  }

  func run() -> Int32 {
    let catalog: JSONObject
    do {
      guard case .object(let object) = try JSONParser.parse(try System.readFile(file)) else {
        Console.error("tipsd \(Self.name): \(file): not a JSON object\n")
        return 1
      }
      catalog = object
    } catch {
      Console.error("tipsd \(Self.name): \(file): \(error)\n")
      return 1
    }
    return target.call(
      Self.name, CatalogsPublishRequest.method,
      ["catalog": .object(catalog), "note": .string(note), "dryRun": .bool(dryRun)])
  }
}

/// `tipsd catalog diff FROM TO`: `catalogs/diff`.
struct CatalogDiffCommand: Command {
  static let name = "catalog diff"
  static let abstract = "hosted: what changed between two published versions (catalogs/diff)"
  static let usage = "tipsd catalog diff FROM TO [--app ID] [--socket PATH] [--token-file FILE]"
  static let options = CatalogTarget.options(\CatalogDiffCommand.target)

  var target: CatalogTarget
  var from = 0
  var to = 0

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    target = CatalogTarget(environment: environment)
    var found: [String] = []
    try Arguments.parse(arguments, into: &self, options: Self.options) { _, argument in found.append(argument) }
    let words = try CatalogTarget.positionals(found, ["FROM", "TO"])
    from = try CatalogTarget.version(words[0], what: "FROM")
    to = try CatalogTarget.version(words[1], what: "TO")
  }

  func run() -> Int32 {
    target.call(Self.name, CatalogsDiffRequest.method, ["from": .int(Int64(from)), "to": .int(Int64(to))])
  }
}

/// `tipsd catalog rollback VERSION`: `catalogs/rollback`.
struct CatalogRollbackCommand: Command {
  static let name = "catalog rollback"
  static let abstract = "hosted: make a published version current again (catalogs/rollback)"
  static let usage = "tipsd catalog rollback VERSION [--app ID] [--socket PATH] [--token-file FILE]"
  static let options = CatalogTarget.options(\CatalogRollbackCommand.target)

  var target: CatalogTarget
  var version = 0

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    target = CatalogTarget(environment: environment)
    var found: [String] = []
    try Arguments.parse(arguments, into: &self, options: Self.options) { _, argument in found.append(argument) }
    version = try CatalogTarget.version(try CatalogTarget.positionals(found, ["VERSION"])[0])
  }

  func run() -> Int32 {
    target.call(Self.name, CatalogsRollbackRequest.method, ["version": .int(Int64(version))])
  }
}

/// `tipsd catalog schedule VERSION AT`: `catalogs/schedule`; AT in seconds since the epoch, or `+SECONDS` from now.
struct CatalogScheduleCommand: Command {
  static let name = "catalog schedule"
  static let abstract = "hosted: publish a stored version at an instant (catalogs/schedule)"
  static let usage = "tipsd catalog schedule VERSION AT [--app ID] [--socket PATH] [--token-file FILE]"
  static let discussion = "AT: seconds since the epoch (UTC), or +SECONDS from now."
  static let options = CatalogTarget.options(\CatalogScheduleCommand.target)

  var target: CatalogTarget
  var version = 0
  var at = 0.0

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    target = CatalogTarget(environment: environment)
    var found: [String] = []
    try Arguments.parse(arguments, into: &self, options: Self.options) { _, argument in found.append(argument) }
    let words = try CatalogTarget.positionals(found, ["VERSION", "AT"])
    version = try CatalogTarget.version(words[0])
    let text = words[1]
    guard let seconds = Double(text.hasPrefix("+") ? String(text.dropFirst()) : text), seconds.isFinite, seconds >= 0
    else { throw .invalid("AT: \"\(text)\" is not seconds since the epoch or +SECONDS") }
    at = text.hasPrefix("+") ? System.wallClockSeconds() + seconds : seconds
  }

  func run() -> Int32 {
    target.call(Self.name, CatalogsScheduleRequest.method, ["version": .int(Int64(version)), "at": .double(at)])
  }
}

/// `tipsd catalog history`: `catalogs/history`.
struct CatalogHistoryCommand: Command {
  static let name = "catalog history"
  static let abstract = "hosted: an app's published versions, newest first (catalogs/history)"
  static let usage = "tipsd catalog history [--app ID] [--socket PATH] [--token-file FILE]"
  static let options = CatalogTarget.options(\CatalogHistoryCommand.target)

  var target: CatalogTarget

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    target = CatalogTarget(environment: environment)
    var found: [String] = []
    try Arguments.parse(arguments, into: &self, options: Self.options) { _, argument in found.append(argument) }
    _ = try CatalogTarget.positionals(found, [])
  }

  func run() -> Int32 { target.call(Self.name, CatalogsHistoryRequest.method, [:]) }
}
