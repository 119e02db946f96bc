public import TipsEngine
import TipsJSON
import TipsSystem

/// What `tipsd lint` (and the daemon, at start and on reload) checks beyond decoding.
public struct LintOptions: Sendable, Hashable {
  /// The naming convention tip and template ids must follow (`--id-pattern`).
  public var idPattern: IDPattern
  /// Whether to run ``Simulation`` (`--simulate`).
  public var simulate: Bool
  /// The donation history an event keeps when it declares no `maxDonations` (the engine's default, 1000): a
  /// windowed, `where` or `largestGroupBy` threshold above it can never hold.
  public var defaultDonationLimit: Int

  public init(
    idPattern: IDPattern = .featurePurpose, simulate: Bool = false,
    defaultDonationLimit: Int = EngineConfiguration().defaultDonationLimit
  ) {
    self.idPattern = idPattern
    self.simulate = simulate
    self.defaultDonationLimit = defaultDonationLimit
  }
}

/// Loads a catalog the careful way: every element decoded on its own, message files applied, every lint check run,
/// all problems collected (see ``LintCheck``). `tipsd lint` prints the report; the daemon refuses a catalog with
/// errors and logs its warnings (their messages never quote copy text, so they are safe to log).
public enum CatalogLoader {
  /// Reads `path` (and `messagesDirectory/{locale}.json`), checks everything and reports. Never throws: an
  /// unreadable or malformed file is a diagnostic like any other.
  public static func load(path: String, messagesDirectory: String? = nil, options: LintOptions = LintOptions())
    -> CatalogReport
  {
    let bytes: [UInt8]
    do {
      bytes = try System.readFile(path)
    } catch {
      return CatalogReport(
        catalog: nil,
        diagnostics: [
          Diagnostic(.io, file: path, path: "$", position: nil, message: "cannot read it: \(error.reason)")
        ],
        files: [path])
    }
    return check(bytes: bytes, file: path, messagesDirectory: messagesDirectory, options: options)
  }

  /// The translators' files that go with a catalog when none are named: a `messages` directory beside it, if
  /// there is one (`catalog/messages/` for `catalog/app.json`). What `tipsd serve` and `tipsd lint` both use.
  public static func messagesDirectory(besideCatalog path: String) -> String? {
    let candidate = "\(System.splitPath(path).directory)/messages"
    return System.isDirectory(candidate) ? candidate : nil
  }

  /// Checks a catalog already in memory (`file` names it in diagnostics), with message files from disk.
  /// `messageFiles` (file name → bytes, e.g. `"ja.json"`) stand in for files of `messagesDirectory`, present on disk
  /// or not: an editor's unsaved buffers (`tipsd lsp`).
  public static func check(
    bytes: [UInt8], file: String, messagesDirectory: String? = nil, options: LintOptions = LintOptions(),
    messageFiles: [String: [UInt8]] = [:]
  ) -> CatalogReport {
    var linter = Linter(file: file, bytes: bytes, options: options)
    return linter.run(messagesDirectory: messagesDirectory, messageFiles: messageFiles)
  }
}

/// One lint run over one catalog file and its message files.
struct Linter {
  let file: String
  let options: LintOptions
  let bytes: [UInt8]
  var positions = JSONPositions([])
  var diagnostics: [Diagnostic] = []
  var files: [String]

  init(file: String, bytes: [UInt8], options: LintOptions) {
    self.file = file
    self.bytes = bytes
    self.options = options
    self.files = [file]
  }

  mutating func run(messagesDirectory: String?, messageFiles: [String: [UInt8]] = [:]) -> CatalogReport {
    let json: JSONValue
    do {
      json = try JSONParser.parse(bytes)
    } catch {
      let position = JSONPositions(bytes).position(atOffset: error.offset)
      diagnostics.append(
        Diagnostic(.json, file: file, path: "$", position: position, message: "invalid JSON: \(error.message)"))
      return finish(catalog: nil)
    }
    positions = JSONPositions(bytes)
    for duplicate in positions.duplicateKeys {
      add(
        .duplicateKey, duplicate.path, "this key appears more than once in its object; only the last value counts",
        position: positions.position(atOffset: duplicate.offset))
    }
    let decoder = CatalogDecoder(json: json)
    let flagged = checkRawRules(decoder)
    for issue in decoder.issues where !flagged.contains(issue.path) {
      add(issue.check, issue.path, issue.message)
    }
    var catalog = decoder.catalog
    if let messagesDirectory {
      let (messages, problems) = MessageCatalog.scan(directory: messagesDirectory, overrides: messageFiles)
      files += messages.files.map { $0.path }
      diagnostics += problems
      checkMessages(messages, catalog: catalog)
      catalog = catalog.applying(messages)
    }
    checkEvents(decoder)
    checkTips(catalog, decoder)
    checkFollowers(catalog, decoder)
    checkSchedules(catalog, decoder)
    checkHoldouts(catalog, decoder)
    checkTemplates(catalog, decoder)
    checkCopy(catalog, decoder, messagesDirectory: messagesDirectory)
    return finish(catalog: catalog)
  }

  mutating func finish(catalog: Catalog?) -> CatalogReport {
    let rank = Dictionary(files.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
    let ordered = diagnostics.enumerated().sorted { a, b in
      let left = (rank[a.element.file] ?? files.count, a.element.line ?? 0, a.element.column ?? 0, a.offset)
      let right = (rank[b.element.file] ?? files.count, b.element.line ?? 0, b.element.column ?? 0, b.offset)
      return left < right
    }.map { $0.element }
    let clean = !ordered.contains { $0.severity == .error }
    var report = CatalogReport(catalog: clean ? catalog : nil, diagnostics: ordered, files: files)
    if options.simulate, clean, let catalog {
      do {
        report.simulation = try Simulation.run(catalog)
      } catch {
        report.diagnostics.append(
          Diagnostic(.decode, file: file, path: "$", position: nil, message: "the engine refused the catalog: \(error)")
        )
        report.catalog = nil
      }
    }
    return report
  }

  // MARK: - Positions

  mutating func add(_ check: LintCheck, _ path: String, _ message: String, position: SourcePosition? = nil) {
    diagnostics.append(
      Diagnostic(
        check, file: file, path: path, position: position ?? self.position(path, message: message), message: message))
  }

  /// Where `path` starts in the catalog; for `unknown key "x"` the key itself; else the nearest enclosing value.
  func position(_ path: String, message: String = "") -> SourcePosition? {
    let root = path == "$" ? "" : path
    if message.hasPrefix("unknown key \""),
      let key = message.dropFirst("unknown key \"".count).split(separator: "\"").first
    {
      if let position = positions.keyPosition(of: root.isEmpty ? String(key) : "\(root).\(key)") { return position }
    }
    var current = root
    while true {
      if let position = positions.position(of: current) { return position }
      if current.isEmpty { return nil }
      current = Self.parent(of: current)
    }
  }

  static func parent(of path: String) -> String {
    if path.hasSuffix("]"), let open = path.lastIndex(of: "[") { return String(path[..<open]) }
    if let dot = path.lastIndex(of: ".") { return String(path[..<dot]) }
    return ""
  }
}
