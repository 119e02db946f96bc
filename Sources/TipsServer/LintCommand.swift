import TipsCatalog
import TipsSystem

/// `tipsd lint CATALOG [--messages DIR] [--format text|json|github] [--id-pattern PATTERN] [--simulate]`: the
/// ship-day checklist as checks (``CatalogLoader``). Exit status 1 with errors, 0 with warnings only, 2 on a usage
/// error.
enum LintCommand {
  static let usage = """
    usage: tipsd lint CATALOG [--messages DIR] [--format text|json|github] [--id-pattern PATTERN] [--simulate]
      --messages DIR        translators' message files DIR/{locale}.json (their "tipkit" copy); default: a
                            `messages` directory beside the catalog, if there is one
      --format FORMAT       text (default), json, or github (GitHub Actions annotations)
      --id-pattern PATTERN  feature.purpose (default: lowercase dotted, two segments or more), any, or a regex
      --simulate            also show which tips a fresh install and an already-qualified user see
    """

  static func run(_ args: [String]) -> Int32 {
    var catalogPath: String?
    var messages: String?
    var format = ReportFormat.text
    var options = LintOptions()
    var index = 0
    func value(_ flag: String) -> String? {
      index += 1
      return index < args.count ? args[index] : nil
    }
    func usageError(_ message: String) -> Int32 {
      writeStderr("tipsd lint: \(message)\n\(usage)\n")
      return 2
    }
    while index < args.count {
      let arg = args[index]
      switch arg {
      case "--messages":
        guard let directory = value(arg) else { return usageError("--messages needs a directory") }
        messages = directory
      case "--format":
        guard let name = value(arg), let chosen = ReportFormat(rawValue: name) else {
          return usageError("--format: expected text, json or github")
        }
        format = chosen
      case "--id-pattern":
        guard let text = value(arg) else { return usageError("--id-pattern needs a pattern") }
        do {
          options.idPattern = try IDPattern(parsing: text)
        } catch {
          return usageError("--id-pattern: \(error.message)")
        }
      case "--simulate": options.simulate = true
      case "--help", "-h":
        print(usage)
        return 0
      default:
        guard !arg.hasPrefix("-"), catalogPath == nil else { return usageError("unexpected argument \"\(arg)\"") }
        catalogPath = arg
      }
      index += 1
    }
    guard let catalogPath else { return usageError("which catalog? (tipsd lint CATALOG)") }
    // As `tipsd serve` does: translators' files beside the catalog unless told otherwise.
    if messages == nil { messages = CatalogLoader.messagesDirectory(besideCatalog: catalogPath) }
    let report = CatalogLoader.load(path: catalogPath, messagesDirectory: messages, options: options)
    print(report.rendered(format), terminator: "")
    return report.exitStatus
  }
}
