import TipsCatalog

/// `tipsd lint CATALOG [--messages DIR] [--format text|json|github] [--id-pattern PATTERN] [--simulate]`: the
/// ship-day checklist as checks (``CatalogLoader``). Exit status 1 with errors, 0 with warnings only, 2 on a usage
/// error.
struct LintCommand: Command {
  static let name = "lint"
  static let abstract = "check a catalog: the ship-day checklist (exit status 1 on errors)"
  static let usage =
    "tipsd lint CATALOG [--messages DIR] [--format text|json|github] [--id-pattern PATTERN] [--simulate]"
  static let discussion = "Exit status: 1 when the catalog has errors, 0 with warnings only or none."
  static let options: [Option<LintCommand>] = [
    .value(
      "--messages", as: "DIR",
      help: """
        translators' message files DIR/{locale}.json (their "tipkit" copy); default: a
        `messages` directory beside the catalog, if there is one
        """
    ) { $0.messages = $1.text },
    .value("--format", as: "FORMAT", help: "text (default), json, or github (GitHub Actions annotations)") {
      command, value throws(UsageError) in
      command.format = try value.oneOf(ReportFormat.self)
    },
    .value(
      "--id-pattern", as: "PATTERN",
      help: "feature.purpose (default: lowercase dotted, two segments or more), any, or a regex"
    ) { command, value throws(UsageError) in command.lint.idPattern = try LintCommand.idPattern(value) },
    .flag("--simulate", help: "also show which tips a fresh install and an already-qualified user see") {
      $0.lint.simulate = true
    },
  ]

  var catalogPath = ""
  var messages: String?
  var format = ReportFormat.text
  var lint = LintOptions()

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    var catalog: String?
    try Arguments.parse(arguments, into: &self, options: Self.options) { _, argument throws(UsageError) in
      guard catalog == nil else { throw .invalid("unexpected argument \"\(argument)\" (one catalog at a time)") }
      catalog = argument
    }
    guard let catalog else { throw .invalid("which catalog? (tipsd lint CATALOG)") }
    catalogPath = catalog
  }

  /// `--id-pattern`'s value (shared with `tipsd lsp`).
  static func idPattern(_ value: OptionValue) throws(UsageError) -> IDPattern {
    do {
      return try IDPattern(parsing: value.text)
    } catch {
      throw value.invalid(error.message)
    }
  }

  func run() -> Int32 {
    // As `tipsd serve` does: translators' files beside the catalog unless told otherwise.
    let messages = messages ?? CatalogLoader.messagesDirectory(besideCatalog: catalogPath)
    let report = CatalogLoader.load(path: catalogPath, messagesDirectory: messages, options: lint)
    print(report.rendered(format), terminator: "")
    return report.exitStatus
  }
}
