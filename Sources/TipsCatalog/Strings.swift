import TipsJSON
import TipsSystem

/// The file formats of `tipsd strings export|import`.
public enum StringsFormat: String, Sendable, Hashable, CaseIterable {
  /// `{locale}.json` message files, seed 000's layout: `{"tipkit": {"filter.tip.title": "…"}}`.
  case json
  /// Apple `.strings`: `{locale}.lproj/Tips.strings`, lines `"tipkit.filter.tip.title" = "…";`.
  case strings
  /// An Apple String Catalog: `Tips.xcstrings` (`sourceLanguage`, `strings` → key → `localizations` → locale →
  /// `stringUnit` {`state`, `value`}, `version` 1.0).
  case xcstrings
  /// XLIFF 1.2, what Xcode's localization catalogs and translation services exchange: `{locale}.xliff` (see
  /// ``XLIFF``).
  case xliff

  /// `json|strings|xcstrings|xliff`, for usage lines.
  public static var names: String { allCases.map(\.rawValue).joined(separator: "|") }

  /// What `tipsd strings export` writes under its output directory, for usage lines.
  public static var layouts: String {
    "DIR/{locale}.json, DIR/{locale}.lproj/Tips.strings, DIR/Tips.xcstrings or DIR/{locale}.xliff"
  }
}

/// The catalog's copy as translators' files (`tipsd strings export`). Keys are in catalog order (per tip: title,
/// message, actions, then each variant's), locales the source locale first, then the declared ones; a string a
/// locale lacks is left out. Output is deterministic, so export → import → export gives identical bytes.
public enum StringsExport {
  /// One file to write: its path relative to the output directory and its bytes.
  public struct File: Sendable, Hashable {
    public var path: String
    public var bytes: [UInt8]
  }

  /// The source locale, then the declared locales.
  public static func locales(_ catalog: Catalog) -> [String] {
    [catalog.sourceLocale] + catalog.locales.filter { $0 != catalog.sourceLocale }
  }

  /// Every copy key of the catalog (without the `tipkit.` namespace) in catalog order, with its owner's JSON.
  static func slots(_ catalog: Catalog) -> [(key: String, object: JSONObject, member: CopyMember)] {
    var rows: [(key: String, object: JSONObject, member: CopyMember)] = []
    var owners = catalog.tips.map { ($0.id, $0.json.objectValue ?? [:]) }
    owners += catalog.templates.map { ($0.id, $0.json) }
    for (id, object) in owners {
      for slot in Copy.slots(of: object) { rows.append(("\(id).\(slot.member.suffix)", object, slot.member)) }
    }
    return rows
  }

  /// Every copy key of the catalog, in order.
  public static func keys(_ catalog: Catalog) -> [String] {
    slots(catalog).map { $0.key }
  }

  /// The copy of each key in `locale`, in catalog order (keys the locale lacks left out).
  public static func copy(_ catalog: Catalog, locale: String) -> [(key: String, value: String)] {
    let source: String? = locale == catalog.sourceLocale ? nil : locale
    return slots(catalog).compactMap { row in
      Copy.value(row.object, row.member, locale: source).map { (row.key, $0) }
    }
  }

  /// The files of `format` for the catalog. Only XLIFF can fail: copy holding a control character XML 1.0 cannot
  /// carry.
  public static func files(_ catalog: Catalog, format: StringsFormat) throws(CatalogError) -> [File] {
    switch format {
    case .json:
      return locales(catalog).map { locale in
        File(path: "\(locale).json", bytes: messageFile(copy(catalog, locale: locale)))
      }
    case .strings:
      return locales(catalog).map { locale in
        File(path: "\(locale).lproj/Tips.strings", bytes: stringsFile(copy(catalog, locale: locale), locale: locale))
      }
    case .xcstrings:
      return [File(path: "Tips.xcstrings", bytes: stringCatalog(catalog))]
    case .xliff:
      let sources = Dictionary(copy(catalog, locale: catalog.sourceLocale).map { ($0.key, $0.value) }) { a, _ in a }
      var files: [File] = []
      for locale in locales(catalog) {
        let targets = Dictionary(copy(catalog, locale: locale).map { ($0.key, $0.value) }) { a, _ in a }
        let units = keys(catalog).compactMap { key in
          sources[key].map { (key: key, source: $0, target: targets[key]) }
        }
        files.append(
          File(
            path: "\(locale).xliff",
            bytes: try XLIFF.file(sourceLocale: catalog.sourceLocale, locale: locale, units: units)))
      }
      return files
    }
  }

  /// Writes the files under `directory` (created when missing); returns their paths.
  public static func write(_ catalog: Catalog, format: StringsFormat, to directory: String) throws(CatalogError)
    -> [String]
  {
    var written: [String] = []
    for file in try files(catalog, format: format) {
      let path = join(directory, file.path)
      do {
        if let slash = path.lastIndex(of: "/") { try System.makeDirectories(String(path[..<slash])) }
        try System.writeFile(path, file.bytes)
      } catch {
        throw CatalogError(file: path, message: "cannot write it: \(error.reason)")
      }
      written.append(path)
    }
    return written
  }

  /// `{"tipkit": {...}}`, 2-space indent, UTF-8 unescaped, a trailing newline.
  static func messageFile(_ entries: [(key: String, value: String)]) -> [UInt8] {
    let object: JSONObject = [
      MessageCatalog.namespace: .object(JSONObject(entries.map { ($0.key, .string($0.value)) }))
    ]
    return Array((JSONValue.object(object).prettyString() + "\n").utf8)
  }

  static func stringsFile(_ entries: [(key: String, value: String)], locale: String) -> [UInt8] {
    var text = "/* Tips' copy for \(locale), from tipsd strings export. */\n"
    for (key, value) in entries {
      text += "\"\(escapeStrings("\(MessageCatalog.namespace).\(key)"))\" = \"\(escapeStrings(value))\";\n"
    }
    return Array(text.utf8)
  }

  /// Apple `.strings` escaping: `\"`, `\\`, `\n`, `\r`, `\t`, other control characters as `\UXXXX`.
  static func escapeStrings(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default:
        if scalar.value < 0x20 || scalar.value == 0x7F {
          let hex = String(scalar.value, radix: 16, uppercase: true)
          out += "\\U" + String(repeating: "0", count: 4 - hex.count) + hex
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out
  }

  static func stringCatalog(_ catalog: Catalog) -> [UInt8] {
    let allLocales = locales(catalog)
    let perLocale = Dictionary(
      allLocales.map { locale in
        (locale, Dictionary(copy(catalog, locale: locale).map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a }))
      },
      uniquingKeysWith: { a, _ in a })
    var strings = JSONObject()
    for key in keys(catalog) {
      var localizations = JSONObject()
      for locale in allLocales {
        guard let value = perLocale[locale]?[key] else { continue }
        localizations[locale] = ["stringUnit": ["state": "translated", "value": .string(value)]]
      }
      strings["\(MessageCatalog.namespace).\(key)"] = [
        "extractionState": "manual", "localizations": .object(localizations),
      ]
    }
    let document: JSONObject = [
      "sourceLanguage": .string(catalog.sourceLocale), "strings": .object(strings), "version": "1.0",
    ]
    return Array((JSONValue.object(document).prettyString() + "\n").utf8)
  }

  static func join(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : "\(directory)/\(name)"
  }
}

/// Translators' files back into message files (`tipsd strings import`).
public enum StringsImport {
  /// One locale's strings as read, in file order (keys without the `tipkit.` namespace).
  public struct Locale: Sendable, Hashable {
    public var locale: String
    public var entries: [MessageCatalog.Entry]
  }

  /// A key the import kept although the catalog has nothing it names, or skipped as outside the namespace.
  public struct Notice: Sendable, Hashable {
    public var file: String
    public var key: String
    public var message: String
  }

  /// Reads what `tipsd strings export` writes: a directory of `{locale}.json` (json), a directory of
  /// `{locale}.lproj/Tips.strings` (strings), a `.xcstrings` file or a directory holding `Tips.xcstrings`, or an
  /// `.xliff` (`.xlf`) file or a directory of them. Keys outside the `tipkit.` namespace are skipped with a notice,
  /// and so (XLIFF) are units without a translation, each with its place.
  public static func read(from path: String, format: StringsFormat) throws(CatalogError) -> ([Locale], [Notice]) {
    switch format {
    case .json:
      let messages = try MessageCatalog.load(directory: path)
      return (messages.files.map { Locale(locale: $0.locale, entries: $0.entries) }, [])
    case .strings:
      let names: [String]
      do {
        names = try System.listDirectory(path)
      } catch {
        throw CatalogError(file: path, message: "cannot read the directory: \(error.reason)")
      }
      var locales: [Locale] = []
      var notices: [Notice] = []
      for name in names where name.hasSuffix(".lproj") {
        let file = StringsExport.join(StringsExport.join(path, name), "Tips.strings")
        guard let bytes = try? System.readFile(file) else { continue }
        let pairs = try StringsParser.parse(bytes, file: file)
        var entries: [MessageCatalog.Entry] = []
        for (key, value) in pairs {
          guard let bare = stripNamespace(key) else {
            notices.append(
              Notice(file: file, key: key, message: "is outside the \(MessageCatalog.namespace). namespace; skipped"))
            continue
          }
          entries.append(MessageCatalog.Entry(key: bare, value: value, path: key))
        }
        locales.append(Locale(locale: String(name.dropLast(".lproj".count)), entries: entries))
      }
      return (locales, notices)
    case .xcstrings:
      let file = System.isDirectory(path) ? StringsExport.join(path, "Tips.xcstrings") : path
      return try readStringCatalog(file)
    case .xliff:
      var files = [path]
      if System.isDirectory(path) {
        do {
          files = try System.listDirectory(path).filter { $0.hasSuffix(".xliff") || $0.hasSuffix(".xlf") }.sorted()
            .map { StringsExport.join(path, $0) }
        } catch {
          throw CatalogError(file: path, message: "cannot read the directory: \(error.reason)")
        }
        guard !files.isEmpty else { throw CatalogError(file: path, message: "holds no .xliff or .xlf file") }
      }
      var locales: [Locale] = []
      var notices: [Notice] = []
      for file in files {
        let bytes: [UInt8]
        do {
          bytes = try System.readFile(file)
        } catch {
          throw CatalogError(file: file, message: "cannot read it: \(error.reason)")
        }
        let (read, found) = try XLIFF.read(bytes, file: file)
        notices += found
        for locale in read {
          if let index = locales.firstIndex(where: { $0.locale == locale.locale }) {
            locales[index].entries += locale.entries
          } else {
            locales.append(locale)
          }
        }
      }
      return (locales, notices)
    }
  }

  static func stripNamespace(_ key: String) -> String? {
    let prefix = MessageCatalog.namespace + "."
    return key.hasPrefix(prefix) ? String(key.dropFirst(prefix.count)) : nil
  }

  static func readStringCatalog(_ file: String) throws(CatalogError) -> ([Locale], [Notice]) {
    let json: JSONValue
    do {
      json = try JSONParser.parse(try System.readFile(file))
    } catch let error as SystemError {
      throw CatalogError(file: file, message: "cannot read it: \(error.reason)")
    } catch {
      throw CatalogError(file: file, message: "\(error)")
    }
    guard case .object(let strings)? = json["strings"] else {
      throw CatalogError(file: file, path: "strings", message: "expected an object of strings")
    }
    var order: [String] = []
    var byLocale: [String: [MessageCatalog.Entry]] = [:]
    var notices: [Notice] = []
    if let source = json["sourceLanguage"]?.stringValue {
      order.append(source)
      byLocale[source] = []
    }
    for (key, entry) in strings {
      guard let bare = stripNamespace(key) else {
        notices.append(
          Notice(file: file, key: key, message: "is outside the \(MessageCatalog.namespace). namespace; skipped"))
        continue
      }
      guard case .object(let localizations)? = entry["localizations"] else { continue }
      for (locale, unit) in localizations {
        guard case .string(let value)? = unit["stringUnit"]?["value"] else {
          notices.append(
            Notice(
              file: file, key: key,
              message:
                "has a \(locale) entry without a stringUnit value (plural or device variations are not imported); skipped"
            ))
          continue
        }
        if byLocale[locale] == nil {
          order.append(locale)
          byLocale[locale] = []
        }
        byLocale[locale]!.append(MessageCatalog.Entry(key: bare, value: value, path: "strings.\(key)"))
      }
    }
    return (order.map { Locale(locale: $0, entries: byLocale[$0]!) }, notices)
  }

  /// Writes `directory/{locale}.json` for each locale in the canonical layout: `{"tipkit": {…}}`, keys in catalog
  /// order, then keys the catalog does not know (kept, with a notice), 2-space indent, UTF-8, a trailing newline.
  /// A file that exists keeps its other top-level keys (the app's own copy); its `tipkit` object and flat
  /// `tipkit.*` keys are replaced. Returns the written paths and the notices.
  public static func write(_ locales: [Locale], catalog: Catalog, to directory: String) throws(CatalogError)
    -> ([String], [Notice])
  {
    let order = Dictionary(
      StringsExport.keys(catalog).enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { a, _ in a })
    let resolver = CopyResolver(
      tips: catalog.tips.map { $0.json.objectValue ?? [:] }, templates: catalog.templates.map { $0.json })
    var written: [String] = []
    var notices: [Notice] = []
    do {
      try System.makeDirectories(directory)
    } catch {
      throw CatalogError(file: directory, message: "cannot create it: \(error.reason)")
    }
    for locale in locales {
      let path = StringsExport.join(directory, "\(locale.locale).json")
      var last: [String: String] = [:]
      var firstSeen: [String] = []
      var places: [String: String] = [:]
      for entry in locale.entries {
        if last.updateValue(entry.value, forKey: entry.key) == nil { firstSeen.append(entry.key) }
        if let place = entry.place { places[entry.key] = place }
      }
      let known = firstSeen.filter { order[$0] != nil }.sorted { order[$0]! < order[$1]! }
      let unknown = firstSeen.filter { order[$0] == nil }
      for key in unknown {
        let reason: String
        if case .failure(let why) = resolver.resolve(key) {
          reason = why.explanation
        } else {
          reason = "is not a copy key of the catalog"
        }
        // Where it came from when the format knows (an XLIFF unit's file and line), else the file written.
        notices.append(
          Notice(file: places[key] ?? path, key: "\(MessageCatalog.namespace).\(key)", message: "\(reason); kept"))
      }
      let copy = JSONObject((known + unknown).map { ($0, JSONValue.string(last[$0]!)) })
      var document = JSONObject()
      if let bytes = try? System.readFile(path), case .object(let existing)? = try? JSONParser.parse(bytes) {
        var placed = false
        for (key, value) in existing {
          if key == MessageCatalog.namespace || key.hasPrefix(MessageCatalog.namespace + ".") {
            if !placed {
              document[MessageCatalog.namespace] = .object(copy)
              placed = true
            }
          } else {
            document[key] = value
          }
        }
        if !placed { document[MessageCatalog.namespace] = .object(copy) }
      } else {
        document[MessageCatalog.namespace] = .object(copy)
      }
      do {
        try System.writeFile(path, Array((JSONValue.object(document).prettyString() + "\n").utf8))
      } catch {
        throw CatalogError(file: path, message: "cannot write it: \(error.reason)")
      }
      written.append(path)
    }
    return (written, notices)
  }
}

/// Apple `.strings` files: `"key" = "value";` pairs, `/* */` and `//` comments, UTF-8 or UTF-16 (with a BOM).
enum StringsParser {
  static func parse(_ bytes: [UInt8], file: String) throws(CatalogError) -> [(key: String, value: String)] {
    let text: String
    if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
      let little = bytes[0] == 0xFF
      var units: [UInt16] = []
      var index = 2
      while index + 1 < bytes.count {
        let a = UInt16(bytes[index])
        let b = UInt16(bytes[index + 1])
        units.append(little ? a | b << 8 : a << 8 | b)
        index += 2
      }
      text = String(decoding: units, as: UTF16.self)
    } else {
      text = String(
        decoding: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes, as: UTF8.self)
    }
    let scalars = Array(text.unicodeScalars)
    var index = 0
    var line = 1
    var pairs: [(key: String, value: String)] = []
    func fail(_ message: String) -> CatalogError {
      CatalogError(file: file, path: "line \(line)", message: message)
    }
    func skip() throws(CatalogError) {
      while index < scalars.count {
        let scalar = scalars[index]
        if scalar == "\n" {
          line += 1
          index += 1
        } else if scalar == " " || scalar == "\t" || scalar == "\r" {
          index += 1
        } else if scalar == "/", index + 1 < scalars.count, scalars[index + 1] == "*" {
          index += 2
          while index + 1 < scalars.count, !(scalars[index] == "*" && scalars[index + 1] == "/") {
            if scalars[index] == "\n" { line += 1 }
            index += 1
          }
          guard index + 1 < scalars.count else { throw fail("unterminated comment") }
          index += 2
        } else if scalar == "/", index + 1 < scalars.count, scalars[index + 1] == "/" {
          while index < scalars.count, scalars[index] != "\n" { index += 1 }
        } else {
          return
        }
      }
    }
    func string() throws(CatalogError) -> String {
      guard index < scalars.count else { throw fail("expected a string") }
      if scalars[index] != "\"" {
        // An unquoted string: letters, digits and `_.-:/`.
        var out = String.UnicodeScalarView()
        while index < scalars.count,
          scalars[index].properties.isAlphabetic || ("0"..."9").contains(scalars[index])
            || "_.-:/".unicodeScalars.contains(scalars[index])
        {
          out.append(scalars[index])
          index += 1
        }
        guard !out.isEmpty else { throw fail("expected a quoted string") }
        return String(out)
      }
      index += 1
      var out = String.UnicodeScalarView()
      while index < scalars.count {
        let scalar = scalars[index]
        index += 1
        switch scalar {
        case "\"": return String(out)
        case "\\":
          guard index < scalars.count else { throw fail("unterminated string") }
          let escape = scalars[index]
          index += 1
          switch escape {
          case "n": out.append("\n")
          case "r": out.append("\r")
          case "t": out.append("\t")
          case "\"", "\\", "'": out.append(escape)
          case "U", "u":
            guard index + 4 <= scalars.count,
              let code = UInt32(String(String.UnicodeScalarView(scalars[index..<index + 4])), radix: 16),
              let decoded = Unicode.Scalar(code)
            else { throw fail("expected four hex digits after \\\(escape)") }
            out.append(decoded)
            index += 4
          default: throw fail("unknown escape \\\(escape)")
          }
        default:
          if scalar == "\n" { line += 1 }
          out.append(scalar)
        }
      }
      throw fail("unterminated string")
    }
    while true {
      try skip()
      guard index < scalars.count else { return pairs }
      let key = try string()
      try skip()
      guard index < scalars.count, scalars[index] == "=" else { throw fail("expected = after a key") }
      index += 1
      try skip()
      let value = try string()
      try skip()
      guard index < scalars.count, scalars[index] == ";" else { throw fail("expected ; after a value") }
      index += 1
      pairs.append((key, value))
    }
  }
}
