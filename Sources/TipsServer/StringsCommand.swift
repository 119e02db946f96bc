import TipsCatalog

/// `tipsd strings export|import`: the catalog's copy as translators' files and back (``StringsExport``,
/// ``StringsImport``). Exit status 1 when a file cannot be read or written, 2 on a usage error.
enum StringsCommand {
  static let usage = """
    usage: tipsd strings export CATALOG [--messages DIR] --format \(StringsFormat.names) --out DIR
           tipsd strings import CATALOG --format \(StringsFormat.names) --from PATH --messages DIR
      export  writes \(StringsFormat.layouts): the source
              locale and every declared locale, keys in catalog order
      import  reads those files and writes the message files --messages DIR/{locale}.json ({"tipkit": {…}};
              other top-level keys of an existing file are kept); keys the catalog lacks are kept and reported
    """

  static func run(_ args: [String]) -> Int32 {
    func usageError(_ message: String) -> Int32 {
      writeStderr("tipsd strings: \(message)\n\(usage)\n")
      return 2
    }
    guard let verb = args.first else { return usageError("export or import?") }
    if verb == "--help" || verb == "-h" || verb == "help" {
      print(usage)
      return 0
    }
    guard verb == "export" || verb == "import" else { return usageError("unknown command \"\(verb)\"") }
    var catalogPath: String?
    var flags: [String: String] = [:]
    var index = 1
    while index < args.count {
      let arg = args[index]
      if ["--messages", "--format", "--out", "--from"].contains(arg) {
        guard index + 1 < args.count else { return usageError("\(arg) needs a value") }
        flags[arg] = args[index + 1]
        index += 2
        continue
      }
      guard !arg.hasPrefix("-"), catalogPath == nil else { return usageError("unexpected argument \"\(arg)\"") }
      catalogPath = arg
      index += 1
    }
    guard let catalogPath else { return usageError("which catalog?") }
    guard let formatName = flags["--format"], let format = StringsFormat(rawValue: formatName) else {
      return usageError("--format: expected \(StringsFormat.names)")
    }
    if verb == "export" {
      guard let out = flags["--out"], flags["--from"] == nil else {
        return usageError("export needs --out DIR (and no --from)")
      }
      do {
        let catalog = try Catalog(path: catalogPath, messagesDirectory: flags["--messages"])
        for path in try StringsExport.write(catalog, format: format, to: out) { print(path) }
        return 0
      } catch {
        writeStderr("tipsd strings export: \(error)\n")
        return 1
      }
    }
    guard let from = flags["--from"], let messages = flags["--messages"], flags["--out"] == nil else {
      return usageError("import needs --from PATH and --messages DIR (and no --out)")
    }
    do {
      let catalog = try Catalog(path: catalogPath)
      let (locales, skipped) = try StringsImport.read(from: from, format: format)
      let (written, kept) = try StringsImport.write(locales, catalog: catalog, to: messages)
      for notice in skipped + kept {
        writeStderr("tipsd strings import: \(notice.file): \(notice.key) \(notice.message)\n")
      }
      for path in written { print(path) }
      return 0
    } catch {
      writeStderr("tipsd strings import: \(error)\n")
      return 1
    }
  }
}
