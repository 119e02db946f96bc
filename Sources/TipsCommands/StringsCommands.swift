import TipsCatalog

/// `--format json|strings|xcstrings|xliff`, which both `tipsd strings` commands need.
private let formatOption = Option<StringsFormat?>.value(
  "--format", as: StringsFormat.names,
  help: "json: DIR/{locale}.json; strings: DIR/{locale}.lproj/Tips.strings; xcstrings: DIR/Tips.xcstrings; "
    + "xliff: DIR/{locale}.xliff (XLIFF 1.2)"
) { format, value throws(UsageError) in format = try value.oneOf(StringsFormat.self) }

/// The catalog (one positional argument) of a `tipsd strings` command.
private func catalogArgument(_ catalog: inout String?, _ argument: String) throws(UsageError) {
  guard catalog == nil else { throw .invalid("unexpected argument \"\(argument)\" (one catalog at a time)") }
  catalog = argument
}

/// `tipsd strings export CATALOG [--messages DIR] --format FORMAT --out DIR`: the catalog's copy as translators' files
/// (``StringsExport``): the source locale and every declared locale, keys in catalog order. Exit status 1 when a
/// file cannot be read or written.
struct StringsExportCommand: Command {
  static let name = "strings export"
  static let abstract = "the catalog's copy as translators' files: json, .strings, .xcstrings or .xliff"
  static let usage = "tipsd strings export CATALOG [--messages DIR] --format \(StringsFormat.names) --out DIR"
  static let discussion = """
    Writes \(StringsFormat.layouts): the source
    locale and every declared locale, keys in catalog order; prints each path written.
    """
  static let options: [Option<StringsExportCommand>] = [
    .value("--messages", as: "DIR", help: "the catalog's message files, merged into its copy") {
      $0.messages = $1.text
    },
    formatOption.lifted(\.format),
    .value("--out", as: "DIR", help: "where the files go") { $0.out = $1.text },
  ]

  var catalog: String?
  var messages: String?
  var format: StringsFormat?
  var out: String?

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    try Arguments.parse(arguments, into: &self, options: Self.options) { command, argument throws(UsageError) in
      try catalogArgument(&command.catalog, argument)
    }
    guard catalog != nil else { throw .invalid("which catalog? (tipsd strings export CATALOG)") }
    guard format != nil else { throw .invalid("--format is required (\(StringsFormat.names))") }
    guard out != nil else { throw .invalid("--out DIR is required") }
  }

  func run() -> Int32 {
    guard let catalog, let format, let out else { return 2 }
    do {
      let loaded = try Catalog(path: catalog, messagesDirectory: messages)
      for path in try StringsExport.write(loaded, format: format, to: out) { print(path) }
      return 0
    } catch {
      Console.error("tipsd strings export: \(error)\n")
      return 1
    }
  }
}

/// `tipsd strings import CATALOG --format FORMAT --from PATH --messages DIR`: translators' files back into the message
/// files (``StringsImport``). Keys the catalog lacks are kept and reported. Exit status 1 when a file cannot be read
/// or written.
struct StringsImportCommand: Command {
  static let name = "strings import"
  static let abstract = "translators' files back into the message files DIR/{locale}.json"
  static let usage = "tipsd strings import CATALOG --format \(StringsFormat.names) --from PATH --messages DIR"
  static let discussion = """
    Reads those files and writes the message files --messages DIR/{locale}.json ({"tipkit": {…}};
    other top-level keys of an existing file are kept); keys the catalog lacks are kept and reported.
    """
  static let options: [Option<StringsImportCommand>] = [
    formatOption.lifted(\.format),
    .value("--from", as: "PATH", help: "the translators' directory (or Tips.xcstrings file)") { $0.from = $1.text },
    .value("--messages", as: "DIR", help: "the message files to write") { $0.messages = $1.text },
  ]

  var catalog: String?
  var format: StringsFormat?
  var from: String?
  var messages: String?

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    try Arguments.parse(arguments, into: &self, options: Self.options) { command, argument throws(UsageError) in
      try catalogArgument(&command.catalog, argument)
    }
    guard catalog != nil else { throw .invalid("which catalog? (tipsd strings import CATALOG)") }
    guard format != nil else { throw .invalid("--format is required (\(StringsFormat.names))") }
    guard from != nil, messages != nil else { throw .invalid("--from PATH and --messages DIR are required") }
  }

  func run() -> Int32 {
    guard let catalog, let format, let from, let messages else { return 2 }
    do {
      let loaded = try Catalog(path: catalog)
      let (locales, skipped) = try StringsImport.read(from: from, format: format)
      let (written, kept) = try StringsImport.write(locales, catalog: loaded, to: messages)
      for notice in skipped + kept {
        Console.error("tipsd strings import: \(notice.file): \(notice.key) \(notice.message)\n")
      }
      for path in written { print(path) }
      return 0
    } catch {
      Console.error("tipsd strings import: \(error)\n")
      return 1
    }
  }
}
